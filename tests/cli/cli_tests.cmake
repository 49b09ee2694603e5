# The command-line programs as a user runs them (included by tests/CMakeLists.txt, in its scope):
# moejit's subcommands, the bench programs without a GPU, precompile's strict runs, plan, inspect.

# The CLI, as a user runs it.
add_test(NAME cli_help COMMAND moejit --help)
add_test(NAME cli_version COMMAND moejit --version)
set_tests_properties(cli_version PROPERTIES PASS_REGULAR_EXPRESSION "NVRTC 13\\.[0-9]+ \\(release")
add_test(NAME cli_unknown_command COMMAND moejit frobnicate)
set_tests_properties(cli_unknown_command PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_doctor_no_gpu COMMAND moejit doctor)
set_tests_properties(cli_doctor_no_gpu PROPERTIES
  ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1;MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/doctor"
  PASS_REGULAR_EXPRESSION "targets +sm_90a ok, sm_100a ok, sm_120a ok\n.*no CUDA driver found.*\nGPUs +none"
  FAIL_REGULAR_EXPRESSION "PROBLEM|cannot build")
# moejit run compiles without a GPU: into a cache emptied first (a warm one only finds its kernels).
add_test(NAME cli_run_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${MOEJIT_TEST_CACHE}/run)
set_tests_properties(cli_run_clean PROPERTIES FIXTURES_SETUP run_clean)
add_test(NAME cli_run_no_gpu COMMAND moejit run --model glm5.2 --batch 8)
set_tests_properties(cli_run_no_gpu PROPERTIES FIXTURES_REQUIRED run_clean
  ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1;MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/run"
  PASS_REGULAR_EXPRESSION "compute  [^\n]*, schedule stream, GEMM1 rows paired\n.*moe_compute [^\n]*\(compiled\).*launch skipped: no CUDA driver found")
add_test(NAME cli_run_bad_target COMMAND moejit run --target sm_75)
set_tests_properties(cli_run_bad_target PROPERTIES PASS_REGULAR_EXPRESSION "--target: 'sm_75' is not one of sm_90a, sm_100a, sm_120a")
add_test(NAME cli_run_bad_batch COMMAND moejit run --batch 0)
set_tests_properties(cli_run_bad_batch PROPERTIES PASS_REGULAR_EXPRESSION "--batch: 0 is outside the allowed range \\[1, 256\\]")
add_test(NAME cli_run_bad_model COMMAND moejit run --model llama)
set_tests_properties(cli_run_bad_model PROPERTIES PASS_REGULAR_EXPRESSION "--model: 'llama' is not one of glm5.2, dsv4.1-flash")
add_test(NAME cli_run_no_shared_expert COMMAND moejit run --model gpt-oss-20b --shared-expert)
set_tests_properties(cli_run_no_shared_expert PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_run_no_shared_expert_message COMMAND moejit run --model gpt-oss-20b --shared-expert)
set_tests_properties(cli_run_no_shared_expert_message PROPERTIES
  PASS_REGULAR_EXPRESSION "--shared-expert: model 'gpt-oss-20b' has no shared expert")
add_test(NAME cli_precompile_shared_expert_alone COMMAND moejit precompile --targets sm_90a --shared-expert)
set_tests_properties(cli_precompile_shared_expert_alone PROPERTIES
  PASS_REGULAR_EXPRESSION "--shared-expert needs --model or --config")
add_test(NAME cli_inspect_shared_expert_without_model COMMAND moejit inspect --kernel x --target sm_90a --shared-expert)
set_tests_properties(cli_inspect_shared_expert_without_model PROPERTIES
  PASS_REGULAR_EXPRESSION "--shared-expert is for --model")
add_test(NAME cli_run_shared_expert_no_gpu COMMAND moejit run --model dsv4.1-flash --shared-expert --batch 4)
set_tests_properties(cli_run_shared_expert_no_gpu PROPERTIES FIXTURES_REQUIRED run_clean
  ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1;MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/run"
  PASS_REGULAR_EXPRESSION "E=384 \\+ a fused shared expert.*moe_compute [^\n]*\(compiled\).*launch skipped: no CUDA driver found")

# The bench programs, as run without a GPU or with an option out of range: one line and a code, not a crash.
if(TARGET moejit_bench_moe)
  add_test(NAME bench_moe_no_gpu COMMAND moejit_bench_moe --batches 1)
  set_tests_properties(bench_moe_no_gpu PROPERTIES ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1"
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: skipped: no CUDA driver found[^\n]*\n$")
  add_test(NAME bench_moe_help COMMAND moejit_bench_moe --help)
  set_tests_properties(bench_moe_help PROPERTIES ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1"
    PASS_REGULAR_EXPRESSION "^usage: moejit_bench_moe \\[options\\].*--trace-csv DIR.*Exit status")
  add_test(NAME bench_moe_unknown_option COMMAND moejit_bench_moe --frobnicate)
  set_tests_properties(bench_moe_unknown_option PROPERTIES
    PASS_REGULAR_EXPRESSION "unknown option or missing value: '--frobnicate' \\(moejit_bench_moe --help\\)")
  add_test(NAME bench_moe_bad_stages COMMAND moejit_bench_moe --stages 99)
  set_tests_properties(bench_moe_bad_stages PROPERTIES
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: error: stages = 99 is outside the allowed range \\[2, 16\\]")
  add_test(NAME bench_moe_trace_csv_not_a_directory COMMAND moejit_bench_moe --trace-csv /nonexistent/moejit-traces)
  set_tests_properties(bench_moe_trace_csv_not_a_directory PROPERTIES
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: error: --trace-csv: '/nonexistent/moejit-traces' is not a directory")
  add_test(NAME bench_moe_bad_leave_out COMMAND moejit_bench_moe --leave-out compute)
  set_tests_properties(bench_moe_bad_leave_out PROPERTIES
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: error: --leave-out: 'compute' is not one of dispatch, finalize")
  add_test(NAME bench_moe_bad_integer COMMAND moejit_bench_moe --batches 1,x)
  set_tests_properties(bench_moe_bad_integer PROPERTIES
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: error: --batches: 'x' is not an integer")
  add_test(NAME bench_moe_bad_switch COMMAND moejit_bench_moe --token-frame on,maybe)
  set_tests_properties(bench_moe_bad_switch PROPERTIES
    PASS_REGULAR_EXPRESSION "^moejit_bench_moe: error: --token-frame: 'maybe' is not one of planned, on, off")
  add_test(NAME bench_ep_help COMMAND moejit_bench_ep --help)
  set_tests_properties(bench_ep_help PROPERTIES PASS_REGULAR_EXPRESSION "^usage: moejit_bench_ep ")
  # --help is what was asked for: exit 0 (no regex, so the exit status decides).
  add_test(NAME bench_moe_help_exit_0 COMMAND moejit_bench_moe --help)
  add_test(NAME bench_ep_help_exit_0 COMMAND moejit_bench_ep --help)
  add_test(NAME bench_cache_help_exit_0 COMMAND moejit_bench_cache --help)
  add_test(NAME bench_ep_no_gpu COMMAND moejit_bench_ep --batches 1)
  set_tests_properties(bench_ep_no_gpu PROPERTIES ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1"
    PASS_REGULAR_EXPRESSION "^moejit_bench_ep: skipped: no CUDA driver found")
  # Bad input is named before the device is opened: an error without a GPU too, never a skip.
  foreach(_case IN ITEMS
      "moe_batch_over_capacity|moejit_bench_moe|--batches 1,300|^moejit_bench_moe: error: batch B = 300 is invalid: must be in \\[1, 256\\]"
      "moe_bad_ctas|moejit_bench_moe|--ctas-per-sm 99|^moejit_bench_moe: error: ctas_per_sm = 99 is outside the allowed range"
      "moe_bad_path|moejit_bench_moe|--path bogus|^moejit_bench_moe: error: --path: 'bogus' is not one of fast, exact"
      "moe_bad_sm_count|moejit_bench_moe|--sm-count -3|^moejit_bench_moe: error: --sm-count: -3 is outside the allowed range"
      "moe_sm_count_over|moejit_bench_moe|--sm-count 5000|^moejit_bench_moe: error: --sm-count: 5000 is outside the allowed range \\[0, 4096\\]"
      "moe_shared_expert_none|moejit_bench_moe|--model gpt-oss-120b --shared-expert|^moejit_bench_moe: --shared-expert: none of the models has a shared expert"
      "ep_bad_ranks|moejit_bench_ep|--ranks 3|^moejit_bench_ep: error: experts E = 256 is invalid: must be a positive multiple of ranks R = 3"
      "ep_one_rank|moejit_bench_ep|--ranks 1|^moejit_bench_ep: error: --ranks: 1 is outside the allowed range \\[2, 32\\]"
      "runtime_bad_host_batch|moejit_bench_runtime|--host-batch 0|^moejit_bench_runtime: error: batch B = 0 is invalid"
      "cache_bad_count|moejit_bench_cache|--cold abc|^moejit_bench_cache: error: --cold: 'abc' is not an integer"
      "cache_help|moejit_bench_cache|--help|^usage: moejit_bench_cache ")
    string(REPLACE "|" ";" _case "${_case}")
    list(GET _case 0 _name)
    list(GET _case 1 _program)
    list(GET _case 2 _args)
    list(GET _case 3 _pattern)
    separate_arguments(_args UNIX_COMMAND "${_args}")
    add_test(NAME bench_${_name} COMMAND ${_program} ${_args})
    set_tests_properties(bench_${_name} PROPERTIES ENVIRONMENT "MOEJIT_FORCE_NO_DRIVER=1"
      PASS_REGULAR_EXPRESSION "${_pattern}")
  endforeach()
endif()

# tools/gpu_session.sh tests-par deals every GPU test case to a shard (counted without a GPU).
if(TARGET moejit_gpu_tests)
  add_test(NAME gpu_session_shards_cover_the_suite
    COMMAND env OUT=${CMAKE_CURRENT_BINARY_DIR}/gpu_session_shards DIST=/nonexistent MOEJIT_FORCE_NO_DRIVER=1
            "PATH=$<TARGET_FILE_DIR:moejit_gpu_tests>:$ENV{PATH}" ${PROJECT_SOURCE_DIR}/tools/gpu_session.sh tests-par)
  set_tests_properties(gpu_session_shards_cover_the_suite PROPERTIES
    PASS_REGULAR_EXPRESSION "tests-par: 4 shards, the solo and the partition cases cover all [1-9][0-9]* test cases")
endif()

# tools/gpu_session.sh acceptance runs its benches (a stand-in here: tests/cli/acceptance_dist) on both shapes and
# judges them with bench/acceptance.py: every point of both verdicts meets the bar on times that meet it, and no
# point of acceptance 1 on times 10% slower (a shape left out of the runs would count 9 points, not 18).
foreach(_case IN ITEMS "met|1|acceptance-1: 18 of 18 points meet it.*acceptance-2: 18 of 18 points meet it"
                       "missed|1.1|acceptance-1: 0 of 18 points meet it")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _name)
  list(GET _case 1 _scale)
  list(GET _case 2 _pattern)
  add_test(NAME gpu_session_acceptance_${_name}
    COMMAND env OUT=${CMAKE_CURRENT_BINARY_DIR}/gpu_session_acceptance_${_name} FAKE_BENCH_SCALE=${_scale}
            DIST=${PROJECT_SOURCE_DIR}/tests/cli/acceptance_dist ${PROJECT_SOURCE_DIR}/tools/gpu_session.sh acceptance)
  set_tests_properties(gpu_session_acceptance_${_name} PROPERTIES PASS_REGULAR_EXPRESSION "${_pattern}")
endforeach()
set_tests_properties(gpu_session_acceptance_met PROPERTIES FAIL_REGULAR_EXPRESSION "rc=|not judged")

# precompile with a layer's options fills exactly what that layer loads (issue 12, acceptance 4):
# a strict (MOEJIT_NO_JIT=1) run with --input-bf16 finds every kernel; the control, a
# precompile without the option, leaves the BF16-input kernels out and the strict run fails.
foreach(_case IN ITEMS "bf16|--input-bf16|--input-bf16" "fast_bf16|--path fast --input-bf16|--path fast --input-bf16"
                       "w4a16|--recipe w4a16|--recipe w4a16" "control|--path exact|--input-bf16")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _name)
  list(GET _case 1 _pre)
  list(GET _case 2 _run)
  add_test(NAME cli_precompile_strict_${_name}
    COMMAND ${CMAKE_COMMAND} -DMOEJIT=$<TARGET_FILE:moejit> -DDIR=${MOEJIT_TEST_CACHE}/strict-${_name}
            "-DOPTIONS=${_pre}" "-DRUN_OPTIONS=${_run}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/precompile_strict.cmake)
  set_tests_properties(cli_precompile_strict_${_name} PROPERTIES TIMEOUT 600)
endforeach()
set_tests_properties(cli_precompile_strict_bf16 cli_precompile_strict_fast_bf16 cli_precompile_strict_w4a16 PROPERTIES
  PASS_REGULAR_EXPRESSION "MOEJIT_NO_JIT=1 moejit run [^\n]*: exit 0\n.*launch skipped: no CUDA driver found")
set_tests_properties(cli_precompile_strict_control PROPERTIES PASS_REGULAR_EXPRESSION
  "MOEJIT_NO_JIT=1 forbids compiling, and kernel moe_dispatch<[^\n]*kInputBf16=1")

# moejit plan: the paper's Table 2 from the equations, the sm_90a rule set, JSON, errors.
set(PLAN_ROWS_HEAD "rows/expert r +1 +64\ntile_n +16 +80\ntoken tiles/expert +1 +1\nstages +4 +2\n")
add_test(NAME cli_plan_table2_glm COMMAND moejit plan --model glm5.2 --ranks 8 --batches 1,256 --device rtx-pro-5000)
set_tests_properties(cli_plan_table2_glm PROPERTIES PASS_REGULAR_EXPRESSION
  "${PLAN_ROWS_HEAD}compact weights +no +yes\nhandoff +smem +global\\+shared-chunks\nhandoff slots s +1 +2\nbatched BF16 returns +no +yes\nmirrored metadata +no +no\nresident relay copiers +no +yes\npull cache +no +yes\npull batch depth +8 +2\ndirect scan +yes +no\nl \\(l2 dedicated\\) +1 +4\nco-residency c +2 +2\nregister cap Rcap +160 +160\n")
add_test(NAME cli_plan_table2_dsv4 COMMAND moejit plan --model dsv4.1-flash --ranks 8 --batches 1,256 --device rtx-pro-5000)
set_tests_properties(cli_plan_table2_dsv4 PROPERTIES PASS_REGULAR_EXPRESSION
  "rows/expert r +1 +32\ntile_n +16 +48\ntoken tiles/expert +1 +1\nstages +4 +2\ncompact weights +no +yes\nhandoff +smem +global\\+shared-chunks\nhandoff slots s +1 +2\nbatched BF16 returns +no +yes\nmirrored metadata +yes +yes\nresident relay copiers +no +no\npull cache +no +no\npull batch depth +1 +1\ndirect scan +yes +no\nl \\(l2 dedicated\\) +1 +3\n")
add_test(NAME cli_plan_table2_dsv4_shared
  COMMAND moejit plan --model dsv4.1-flash --ranks 8 --batch 256 --device rtx-pro-5000 --shared-expert)
set_tests_properties(cli_plan_table2_dsv4_shared PROPERTIES PASS_REGULAR_EXPRESSION
  "fused shared expert \\(K-group 32\\).*mirrored metadata +yes\nresident relay copiers +yes\npull cache +no\n.*l \\(l2 dedicated\\) +4\n.*relay copiers: yes, arena R Bcap k 2H = 120 MiB <= 256 MiB, and the shared expert hides the copy")
add_test(NAME cli_plan_h200 COMMAND moejit plan --model glm5.2 --ranks 1 --batches 1-256 --device h200 --path fast)
set_tests_properties(cli_plan_h200 PROPERTIES PASS_REGULAR_EXPRESSION
  "device +h200: sm_90a, 132 SMs, 228 KiB SMEM/SM, 227 KiB/block.*launch plan.*\nstages +8 +5 +4 +4 +5 +5 +7 +7 +7\n.*schedule +units +units +stream .*activation warps +3 +3 +3 .*compute grid x threads +132x512 +132x384 +132x512 .*finalize grid x threads +48x256 +96x256 .*split +12 dispatch \\+ 120 compute SMs \\(eq. 5\\)\nB \\(tokens/rank\\) +1 +2 +4 +8 +16 +32 +64 +128 +256\nrows/expert r +1 +1 +1 +1 +1 +1 +2 +4 +8\ntile_n +16 +16 +16 +16 +16 +16 +16 +16 +16\n.*stages +8 +8 +8 +8 +8 +8 +8 +8 +8\ncompact weights +yes +yes +yes +yes +yes +yes +yes +yes +yes\n.*P_W / P_X \\(B\\) +4608/4608 ")
add_test(NAME cli_plan_json COMMAND moejit plan --model glm5.2 --ranks 8 --batch 256 --device rtx-pro-5000 --json)
set_tests_properties(cli_plan_json PROPERTIES PASS_REGULAR_EXPRESSION
  "\"plans\": \\[.*\"batch\": 256,.*\"l2_dedicated\": 4,.*\"tile_n\": 80,.*\"activation_warps\": 3,")
add_test(NAME cli_plan_config_file
  COMMAND moejit plan --config ${CMAKE_CURRENT_SOURCE_DIR}/data/planner/small_moe.json --batches 1-128 --device h200)
set_tests_properties(cli_plan_config_file PROPERTIES FAIL_REGULAR_EXPRESSION "rejected" PASS_REGULAR_EXPRESSION
  "model +small-moe: H=2048 I=1024 E=64 k=4, R=4 \\(L=16\\), Bcap=128, w4a8-mx, clamp 7, fused shared expert \\(K-group 128\\)")
add_test(NAME cli_plan_bad_config
  COMMAND moejit plan --config ${CMAKE_CURRENT_SOURCE_DIR}/data/planner/bad_hidden.json --batch 1 --device h200)
set_tests_properties(cli_plan_bad_config PROPERTIES PASS_REGULAR_EXPRESSION
  "bad_hidden.json: hidden H = 520 is invalid: must be a multiple of 32 in \\[512, 8192\\]")
# H100 SXM5 has the H200's SMs: a profile of its own name, the same plan.
add_test(NAME cli_plan_h100 COMMAND moejit plan --model glm5.2 --ranks 1 --batch 1 --device h100)
set_tests_properties(cli_plan_h100 PROPERTIES PASS_REGULAR_EXPRESSION "device   h100: sm_90a, 132 SMs")
add_test(NAME cli_plan_bad_device COMMAND moejit plan --model glm5.2 --ranks 8 --batch 1 --device a100)
set_tests_properties(cli_plan_bad_device PROPERTIES PASS_REGULAR_EXPRESSION
  "--device: 'a100' is not one of h200, h100, rtx-pro-5000")
# A codegen option's range error names its flag (the field with hyphens), and the schedule its name and range.
add_test(NAME cli_plan_bad_tile_n COMMAND moejit plan --model glm5.2 --ranks 1 --batch 1 --device h200 --tile-n 12)
set_tests_properties(cli_plan_bad_tile_n PROPERTIES PASS_REGULAR_EXPRESSION
  "--tile-n: tile_n = 12 is invalid: must be 8, 16, 32 or 64")
add_test(NAME cli_plan_bad_schedule COMMAND moejit plan --model glm5.2 --ranks 1 --batch 1 --device h200 --schedule rounds)
set_tests_properties(cli_plan_bad_schedule PROPERTIES PASS_REGULAR_EXPRESSION
  "--schedule: 'rounds' is not one of stream, units, items")
add_test(NAME cli_plan_units_past_the_workspace
  COMMAND moejit plan --model glm5.2 --ranks 1 --batch 16 --device h200 --schedule units)
set_tests_properties(cli_plan_units_past_the_workspace PROPERTIES PASS_REGULAR_EXPRESSION
  "schedule = units is invalid at B = 16: its partial rows take 50331648 B and the workspace holds 12976128 B for them \\(B <= 4\\)")
add_test(NAME cli_plan_bad_ranks COMMAND moejit plan --model glm5.2 --ranks 33 --batch 1 --device h200)
set_tests_properties(cli_plan_bad_ranks PROPERTIES PASS_REGULAR_EXPRESSION
  "--ranks: 33 is outside the allowed range \\[1, 32\\]")
add_test(NAME cli_plan_ranks_not_divisor COMMAND moejit plan --model glm5.2 --ranks 3 --batch 1 --device h200)
set_tests_properties(cli_plan_ranks_not_divisor PROPERTIES PASS_REGULAR_EXPRESSION
  "experts E = 256 is invalid: must be a positive multiple of ranks R = 3")
add_test(NAME cli_plan_bad_batches COMMAND moejit plan --model glm5.2 --ranks 8 --batches 1-512 --device h200)
set_tests_properties(cli_plan_bad_batches PROPERTIES PASS_REGULAR_EXPRESSION
  "--batches: 512 is outside the allowed range \\[1, 256\\]")
add_test(NAME cli_plan_rejected COMMAND moejit plan --model glm5.2 --ranks 8 --batch 1 --device rtx-pro-5000
  --dispatch-sms 80)
set_tests_properties(cli_plan_rejected PROPERTIES PASS_REGULAR_EXPRESSION
  "B = 1 rejected: glm5.2 R=8 B=1 on rtx-pro-5000 \\(sm_120a\\): compute partition of 30 SMs is below the minimum of 32")
add_test(NAME cli_plan_rejected_status COMMAND moejit plan --model glm5.2 --ranks 8 --batch 1 --device rtx-pro-5000
  --dispatch-sms 80)
set_tests_properties(cli_plan_rejected_status PROPERTIES WILL_FAIL TRUE)
# Expert parallelism's Table 2 decisions as the launch plan takes them (DSV4.1-Flash at R = 8: k < R), an
# override that cannot apply, and a bad MOEJIT_DISPATCH_SMS.
add_test(NAME cli_plan_ep_modes COMMAND moejit plan --model dsv4.1-flash --ranks 8 --batch 1 --device h200)
set_tests_properties(cli_plan_ep_modes PROPERTIES FAIL_REGULAR_EXPRESSION "rejected" PASS_REGULAR_EXPRESSION
  "EP modes \\(R > 1\\) +mirror\\+direct-scan")
add_test(NAME cli_plan_ep_mode_invalid COMMAND moejit plan --model glm5.2 --ranks 2 --batch 8 --device h200
  --ep-mode mirror+pull)
set_tests_properties(cli_plan_ep_mode_invalid PROPERTIES PASS_REGULAR_EXPRESSION
  "ep_mode = 3 \\(mirror\\+pull\\) is invalid: mirror and pull are alternatives")
add_test(NAME cli_plan_ep_mode_invalid_status COMMAND moejit plan --model glm5.2 --ranks 2 --batch 8 --device h200
  --ep-mode mirror+pull)
set_tests_properties(cli_plan_ep_mode_invalid_status PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_plan_dispatch_sms_env COMMAND moejit plan --model glm5.2 --ranks 2 --batch 8 --device h200)
set_tests_properties(cli_plan_dispatch_sms_env PROPERTIES ENVIRONMENT MOEJIT_DISPATCH_SMS=200
  PASS_REGULAR_EXPRESSION "MOEJIT_DISPATCH_SMS = '200' is invalid: must be an integer in \\[0, 131\\]")
add_test(NAME cli_plan_help COMMAND moejit plan --help)
set_tests_properties(cli_plan_help PROPERTIES PASS_REGULAR_EXPRESSION "--batches LIST +batch sizes")

# moejit inspect, as a user runs it: per-pass diffs for a built-in kernel and
# for a user's PTX file, the dump directory, and a failing rewrite.
set(_fixtures ${CMAKE_CURRENT_SOURCE_DIR}/ptx/fixtures)
add_test(NAME cli_inspect_smoke_passes
  COMMAND moejit inspect --kernel smoke --target sm_90a --maxnreg 40 --minnctapersm 2)
set_tests_properties(cli_inspect_smoke_passes PROPERTIES PASS_REGULAR_EXPRESSION
  "== pass 2/4 occupancy: changed\n[^\n]*\\.minnctapersm 1 -> 2\n[^\n]*\\.maxnreg 40 inserted\n--- moejit_smoke_mxfp4_dequant\\.ptx \\(before occupancy\\)\n\\+\\+\\+ moejit_smoke_mxfp4_dequant\\.ptx \\(after occupancy\\)\n@@ -19,7 \\+19,8 @@\n[^\n]*\n \\)\n \\.maxntid 256, 1, 1\n-\\.minnctapersm 1\n\\+\\.minnctapersm 2\n\\+\\.maxnreg 40\n \\{\n.*== pass 4/4 validate: module unchanged\n.*moejit_smoke_mxfp4_dequant: [0-9]+ registers")
add_test(NAME cli_inspect_tma_probe_passes COMMAND moejit inspect --kernel tma-probe --target sm_120a)
set_tests_properties(cli_inspect_tma_probe_passes PROPERTIES PASS_REGULAR_EXPRESSION
  "== pass 3/4 tensormap-by-value: changed\n.*-\t\\.param \\.u64 \\.ptr \\.align 1 moejit_tma_probe_param_0,\n.*\\+\t\\.param \\.align 128 \\.b8 moejit_tma_probe_param_0\\[128\\],\n.*\\+\tmov\\.b64 \t%rd[0-9]+, moejit_tma_probe_param_2;\n\\+\tcvta\\.param\\.u64 \t%rd[0-9]+, %rd[0-9]+;\n.*resources \\(nvJitLink -arch=sm_120a")
add_test(NAME cli_inspect_user_ptx
  COMMAND moejit inspect --ptx ${_fixtures}/user_tma.ptx --target sm_90a --tensormap tmap_w:1 --tensormap tmap_x
          --maxnreg 32 --version-cap 8.0)
set_tests_properties(cli_inspect_user_ptx PROPERTIES PASS_REGULAR_EXPRESSION
  "== pass 1/4 version: skipped: PTX 8\\.0 is within the cap 8\\.0\n.*== pass 2/4 occupancy: changed\n.*\\+\\.maxnreg 32\n.*== pass 3/4 tensormap-by-value: changed\n.*--- user_tma\\.ptx \\(before tensormap-by-value\\)\n.*-\t\\.param \\.u64 tmap_w,\n-\t\\.param \\.u64 tmap_x,\n\\+\t\\.param \\.align 128 \\.b8 tmap_w\\[128\\],\n\\+\t\\.param \\.align 128 \\.b8 tmap_x\\[128\\],\n.*-\tld\\.param\\.u64 \t%rd1, \\[tmap_w\\];\n.*\\+\tmov\\.b64 \t%rd1, tmap_w;\n\\+\tcvta\\.param\\.u64 \t%rd1, %rd1;\n.*== pass 4/4 validate: module unchanged\n.*user_tma_load: [0-9]+ registers")
add_test(NAME cli_inspect_user_ptx_bad_count
  COMMAND moejit inspect --ptx ${_fixtures}/user_tma.ptx --target sm_90a --tensormap tmap_w:2)
set_tests_properties(cli_inspect_user_ptx_bad_count PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_inspect_user_ptx_bad_count_message
  COMMAND moejit inspect --ptx ${_fixtures}/user_tma.ptx --target sm_90a --tensormap tmap_w:2)
set_tests_properties(cli_inspect_user_ptx_bad_count_message PROPERTIES PASS_REGULAR_EXPRESSION
  "== pass 3/4 tensormap-by-value: FAILED.*error: pass 'tensormap-by-value': instructions reading %rd1 \\(TensorMap 'tmap_w'\\): expected 2, found 1\nuser_tma\\.ptx:40:2: note: match 1 of 1")
add_test(NAME cli_inspect_dump
  COMMAND sh -c "rm -rf inspect-dump && \"$<TARGET_FILE:moejit>\" inspect --kernel tma-probe --target sm_90a --stage resources --dump-dir inspect-dump && ls inspect-dump"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli_inspect_dump PROPERTIES PASS_REGULAR_EXPRESSION
  "dumped 13 files to inspect-dump\n01-version\\.diff\n01-version\\.ptx\n02-occupancy\\.diff\n02-occupancy\\.ptx\n03-tensormap-by-value\\.diff\n03-tensormap-by-value\\.ptx\n04-validate\\.diff\n04-validate\\.ptx\nfinal\\.ptx\nkernel\\.cubin\nptx\\.nvrtc\\.ptx\nresources\\.json\nsource\\.cu\n$")
add_test(NAME cli_inspect_bad_kernel COMMAND moejit inspect --kernel mma-probe --target sm_90a)
set_tests_properties(cli_inspect_bad_kernel PROPERTIES PASS_REGULAR_EXPRESSION "--kernel: 'mma-probe' does not compile for sm_90a")
# Acceptance 1 as a user types it: a cold precompile into an empty cache, then a
# warm one that compiles nothing (compiles=0) and reports a time under 10 s (a
# compile takes seconds; the ASan build loads and checks the 11 cached cubins in
# about 1.3 s on the 2-core machine).
# (That N equals the number of distinct specs the planner yields is checked in
# tests/unit/test_cache_cli.cpp, which derives it independently.)
set(_precompile precompile --model glm5.2 --ranks 1 --batches 1-256 --targets sm_90a,sm_120a)
add_test(NAME cli_precompile_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${MOEJIT_TEST_CACHE}/precompile)
set_tests_properties(cli_precompile_clean PROPERTIES FIXTURES_SETUP precompile_clean)
add_test(NAME cli_precompile_cold COMMAND moejit ${_precompile})
set_tests_properties(cli_precompile_cold PROPERTIES FIXTURES_REQUIRED precompile_clean FIXTURES_SETUP precompile_cold
  ENVIRONMENT MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/precompile
  PASS_REGULAR_EXPRESSION "distinct kernels +[1-9][0-9]*\ncompiled +[1-9][0-9]*\nalready cached +0\ntime"
  FAIL_REGULAR_EXPRESSION "FAILED|error")
add_test(NAME cli_precompile_warm COMMAND moejit ${_precompile})
set_tests_properties(cli_precompile_warm PROPERTIES FIXTURES_REQUIRED precompile_cold
  ENVIRONMENT MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/precompile
  PASS_REGULAR_EXPRESSION "distinct kernels +[1-9][0-9]*\ncompiled +0\nalready cached +[1-9][0-9]*\ntime +[0-9]\\.[0-9]+ s.*\n.*\ncounters +memory_hits=0 disk_hits=[1-9][0-9]* misses=0 compiles=0 ")
add_test(NAME cli_cache_verify COMMAND moejit cache verify)
set_tests_properties(cli_cache_verify PROPERTIES FIXTURES_REQUIRED precompile_cold
  ENVIRONMENT MOEJIT_CACHE_DIR=${MOEJIT_TEST_CACHE}/precompile PASS_REGULAR_EXPRESSION "verified [1-9][0-9]* entries: [1-9][0-9]* ok, 0 bad")
add_test(NAME cli_precompile_bad_batches COMMAND moejit precompile --targets sm_90a --batches 0-4)
set_tests_properties(cli_precompile_bad_batches PROPERTIES PASS_REGULAR_EXPRESSION "--batches: '0' in '0-4' is not a positive integer")
add_test(NAME cli_precompile_bad_ranks COMMAND moejit precompile --model glm5.2 --ranks 3 --targets sm_90a)
set_tests_properties(cli_precompile_bad_ranks PROPERTIES PASS_REGULAR_EXPRESSION "experts E = 256 is invalid: must be a positive multiple of ranks R = 3")
