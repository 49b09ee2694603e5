#!/usr/bin/env bash
# One device-machine call's worth of GPU work, batched (the device lends
# minutes, and each call pays a machine start). Run from the repository root
# on the GPU machine, with dist/ carried from `tools/dev.sh dist dist`:
#
#   tools/gpu_session.sh [STEP...]      default: tests memcheck plan bench python
#
#   tests     moejit_gpu_tests: the whole GPU matrix, both paths, and the runtime tests
#   memcheck  compute-sanitizer memcheck on `moejit run --batch 8`: each path and the W4A16 recipe (GLM5.2),
#             gpt-oss-120b, and DSV4.1-Flash with the fused shared expert
#   plan      `moejit plan --device h200 --batches 8` beside what `moejit run --batch 8` launches, and
#             `moejit run --model gpt-oss-120b` (B = 1, 64; W4A16 at B = 8), and GLM5.2 with the shared expert
#   bench     moejit_bench_moe: the fast path (the default) twice, the exact path and W4A16 once, the
#             fused shared expert (both recipes) once (and dist/old/moejit_bench_moe once, if carried)
#   python    the wheel in dist/wheels unpacked for the machine's python3 (and its torch), then
#             python/tests, bench/python_overhead.py and examples/torch_moe_block.py
#   tests-a / tests-b  the whole GPU matrix in two calls (tests runs it in one, past the 10-minute limit)
#   tests-par  the whole GPU matrix in one call: GPU_TEST_SHARDS (default 4) moejit_gpu_tests processes at
#             once, each on every Nth case, so their kernels compile on several cores (the processes' grids
#             share the GPU by time slices: a persistent grid never shares SMs with another's); then the
#             case that reads the driver's free device memory, alone (the other processes move it), then
#             the cases on SM partitions, alone (GPU_TEST_PARTITIONS=0 leaves them out: they run the stream
#             schedule on two warpgroups, and a call's 10 minutes may not hold them with the rest)
#   partitions  green-context SM partitions and two layers planned for 64-SM partitions running at once
#   ep        expert parallelism on R = 2 and 4 partitions: its GPU tests, then moejit_bench_ep
#   ep2       expert parallelism on 2 GPUs over NCCL (the nvidia-h200-x2 machine; issue 17): how the GPUs link,
#             moejit_ep_nccl check with one process a GPU on every B and routing (100 graph replays), check in
#             one process (ncclCommInitAll) on a few points, soak with rank 1 killed mid-run (PASS: "kill test
#             passed", rank 1 by signal 9, rank 0 reporting it with exit 3), and bench. NCCL:
#             $MOEJIT_NCCL_LIBRARY, else the loader's libnccl.so.2, else the Python nvidia-nccl wheel's.
#             ep2-check, ep2-single, ep2-kill and ep2-bench are its parts, for calls of the 10-minute limit
#             (EP2_CHECK_ARGS, e.g. "--model glm5.2", narrows the check to one call's worth)
#   small-b   the B <= 8 candidates, each checked first (`moejit run`): the unit schedule against stream at
#             B = 1, 2, 4, the planned PDL (B <= 2) against --no-pdl, and tile_n 8 and the 7-stage ring at
#             B = 8 against the plan (4 stages), A/B'd in the bench twice
#             (bench/results/2026-12-04-h200-flips-and-ring.md)
#   trace     where the compute role's time goes at B = 1-8: `moejit_bench_moe --trace-csv` on both shapes,
#             every CTA's milestones and waits in logs/trace-*.csv beside the summary
#   acceptance  issue 11's acceptance 1 and 2 in one lease: moejit_bench_moe with the defaults (the fast path),
#             dist/old/moejit_bench_moe (75c91f4's, if carried), --path exact, the defaults again, then
#             bench/acceptance.py's tables of both into logs/acceptance-{1,2}.md (exit 1: a point short). On a
#             card other than the H200 (the acceptance's) the same runs are that card's record (--any-device)
#   decoded   MoeCodegenOptions::decoded_scales (off by default): its GPU test, memcheck, the fast path
#             with and without it, alternating in one call (GLM5.2 and DSV4.1-Flash, two runs each), and
#             ncu's issue activity of both at GLM5.2 B = 32
#
# Every step runs even when one before it failed. What comes back from $OUT:
# summary.txt (a line per step: status, seconds, log) and logs/ (the logs,
# each headed by date, commit, device and command), written as the steps run,
# so a call the device's time limit cuts short still returns what it did.
# A call returns a few files only (8 on the H200 lease: tests-par's fifth log
# was left out once), so after the last step logs/ becomes one logs.tgz.
set -uo pipefail
# A relative DIST or OUT names a folder of the caller's directory (a copy of this script run from elsewhere,
# e.g. .device/scripts, read DIST against its own parent and found no COMMIT); unset, DIST is the repository's dist.
case ${DIST:-} in '' | /*) ;; *) DIST="$PWD/$DIST" ;; esac
case ${OUT:-} in '' | /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?OUT must name the folder whose files come back}
DIST=${DIST:-$PWD/dist}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export MOEJIT_CACHE_DIR=${MOEJIT_CACHE_DIR:-/tmp/moejit-cache}
export PATH="$DIST/bin:$PATH"
COMMIT=$(cat "$DIST/COMMIT" 2>/dev/null || echo unknown)
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
steps=("$@")
FIRST_HALF='seed,weight transform*,weight scale codes*,Table 10 edges,H and I multiples*,BF16 input*,W4A16*,'
FIRST_HALF+='E4M3 subnormal*,GLM5.2 matrix,DSV4.1-Flash matrix,decoded scales*,a captured decode*,a forward of B launches*'
[ ${#steps[@]} -gt 0 ] || steps=(tests memcheck plan bench python)

# run LOG CMD...: the command's output into $LOGS/LOG under a header; a line in the summary.
run() {
  local log=$1
  shift
  local t0=$SECONDS rc
  {
    echo "# date: $(date -u +%FT%TZ)  commit: $COMMIT  device: ${DEVICE:-?}"
    echo "# command: $*"
    "$@"
  } >"$LOGS/$log" 2>&1
  rc=$?
  printf '%-6s %4ds  %-28s %s\n' "$([ $rc -eq 0 ] && echo PASS || echo "rc=$rc")" $((SECONDS - t0)) "$log" "$*" |
    tee -a "$OUT/summary.txt"
}

for step in "${steps[@]}"; do
  case $step in
    # GPU_TEST_ARGS (doctest filters, no spaces) splits the matrix across calls of the 10-minute limit.
    tests) run gpu-tests.log moejit_gpu_tests ${GPU_TEST_ARGS:-} ;;
    # The whole matrix in two calls of the 10-minute limit (3 and 4 minutes on a cold cache when written; the
    # kernels of three warpgroups compile longer, and tests-par runs it in one call):
    # tests-a runs the cases in FIRST_HALF, tests-b every other one.
    tests-a) run gpu-tests-a.log moejit_gpu_tests --duration=true -tc="$FIRST_HALF" ;;
    tests-b) run gpu-tests-b.log moejit_gpu_tests --duration=true -tce="$FIRST_HALF" ;;
    tests-par)
      # The cases' names (a comma in a name becomes doctest's one-character wildcard), dealt out round-robin;
      # the cases on SM partitions (expert parallelism, green contexts) wait on other grids with time limits,
      # so they run alone afterwards; a case that reads the driver's free device memory runs after the shards
      # too (solo), since the other shards' processes move it (bench/results/2026-12-04-h200-four-stage-ring.md).
      shards=${GPU_TEST_SHARDS:-4}
      mapfile -t names < <(moejit_gpu_tests -ltc | sed '/^\[doctest\]/d;/^=*$/d')
      filters=() alone="" solo="" covered=0 k=0
      for name in "${names[@]}"; do
        case $name in
          "expert parallelism"* | "SM partitions"* | "two layers planned"*) alone+="${name//,/?}," ;;
          "a layer over weights packed on the host"*) solo+="${name//,/?}," ;;
          *) filters[k % shards]+="${name//,/?}," && k=$((k + 1)) ;;
        esac
      done
      for f in "${filters[@]}" "$alone" "$solo"; do
        [ -n "$f" ] || continue  # (an empty -tc would count every case)
        covered=$((covered + $(moejit_gpu_tests --count -tc="${f%,}" | sed -n 's/.*filters: \([0-9]*\)$/\1/p')))
      done
      if [ "$covered" -eq "${#names[@]}" ]; then
        echo "tests-par: $shards shards, the solo and the partition cases cover all ${#names[@]} test cases"
      else
        echo "tests-par: FAILED: $shards shards, the solo and the partition cases cover $covered of ${#names[@]} test cases"
      fi | tee -a "$OUT/summary.txt"
      for ((i = 0; i < ${#filters[@]}; i++)); do
        run "gpu-tests-shard$((i + 1)).log" moejit_gpu_tests --duration=true -tc="${filters[i]%,}" &
      done
      wait
      [ -n "$solo" ] && run gpu-tests-solo.log moejit_gpu_tests --duration=true -tc="${solo%,}"
      if [ "${GPU_TEST_PARTITIONS:-1}" != 0 ]; then
        run gpu-tests-partitions-alone.log moejit_gpu_tests --duration=true -tc="${alone%,}"
      else
        echo "tests-par: the partition cases left out (GPU_TEST_PARTITIONS=0)" | tee -a "$OUT/summary.txt"
      fi
      # A call returns a limited number of files (a shard's log was once left out): the failed checks also go to
      # stdout, which always comes back.
      grep -h -B3 -A8 -E "ERROR:|FATAL ERROR" "$LOGS"/gpu-tests-shard*.log "$LOGS"/gpu-tests-solo.log \
        "$LOGS"/gpu-tests-partitions-alone.log 2>/dev/null |
        head -120
      ;;
    memcheck)
      for path in exact fast; do
        run "memcheck-$path.log" compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 \
          --batch 8 --path "$path"
      done
      run memcheck-w4a16.log compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 \
        --batch 8 --recipe w4a16
      run memcheck-gpt-oss.log compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model gpt-oss-120b \
        --batch 8
      run memcheck-shared.log compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash \
        --shared-expert --batch 8
      ;;
    plan)
      run plan-h200.log moejit plan --device h200 --model glm5.2 --ranks 1 --batches 8
      run run-b8.log moejit run --model glm5.2 --batch 8
      for b in 1 64; do run "run-gpt-oss-b$b.log" moejit run --model gpt-oss-120b --batch "$b"; done
      run run-gpt-oss-w4a16.log moejit run --model gpt-oss-120b --batch 8 --recipe w4a16
      run run-shared.log moejit run --model glm5.2 --shared-expert --batch 64
      ;;
    bench)
      for i in 1 2; do run "bench-fast-$i.log" moejit_bench_moe --path fast; done
      run bench-exact-1.log moejit_bench_moe --path exact
      run bench-w4a16.log moejit_bench_moe --recipe w4a16
      run bench-shared.log moejit_bench_moe --shared-expert
      run bench-shared-w4a16.log moejit_bench_moe --shared-expert --recipe w4a16
      [ -x "$DIST/old/moejit_bench_moe" ] && run bench-old.log "$DIST/old/moejit_bench_moe"
      ;;
    acceptance)
      # The acceptance's two shapes, each bench under a limit: one that hangs would hold the call's 10 minutes (both
      # shapes' B = 1-256 took 17-44 s on the H200, compiles included). A bench's exit status is kept (124: its limit).
      both() {
        local model
        for model in glm5.2 dsv4.1-flash; do timeout -k 10 150 "$@" --model "$model" || return; done
      }
      run acceptance-fast-1.log both moejit_bench_moe
      old=$([ -x "$DIST/old/moejit_bench_moe" ] && echo yes)
      [ -n "$old" ] && run acceptance-old.log both "$DIST/old/moejit_bench_moe"
      run acceptance-exact.log both moejit_bench_moe --path exact
      run acceptance-fast-2.log both moejit_bench_moe
      any=()
      case ${DEVICE:-} in *H200*) ;; *) any=(--any-device) ;; esac
      # Each verdict's last line ("N of M points meet it") into the summary too.
      verdict() {
        run "$1" python3 bench/acceptance.py "${@:2}"
        echo "${1%.md}: $(tail -1 "$LOGS/$1")" | tee -a "$OUT/summary.txt"
      }
      verdict acceptance-1.md fast ${any[@]+"${any[@]}"} "$LOGS/acceptance-fast-1.log" "$LOGS/acceptance-fast-2.log"
      if [ -n "$old" ]; then
        verdict acceptance-2.md exact ${any[@]+"${any[@]}"} --old "$LOGS/acceptance-old.log" "$LOGS/acceptance-exact.log"
      else
        echo "acceptance-2: not judged: no $DIST/old/moejit_bench_moe (75c91f4's bench) was carried" |
          tee -a "$OUT/summary.txt"
      fi
      ;;
    python)
      # A wheel is a zip: unpacked beside the machine's own python3 (which holds torch), no pip needed.
      run python.log bash -c "rm -rf /tmp/moejit-py && python3 -m zipfile -e $DIST/wheels/moejit-*.whl /tmp/moejit-py &&
        cd /tmp && PYTHONPATH=/tmp/moejit-py python3 -m unittest discover -s $PWD/python/tests -v"
      run python-overhead.log env PYTHONPATH=/tmp/moejit-py python3 bench/python_overhead.py
      run example.log env PYTHONPATH=/tmp/moejit-py python3 examples/torch_moe_block.py --batch 8
      ;;
    decoded)
      run gpu-tests-decoded.log moejit_gpu_tests -tc='decoded scales*'
      run memcheck-decoded.log compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 \
        --batch 8 --decoded-scales
      # One log (a call returns only a few files), each run under its own #### header.
      run bench-decoded-ab.log bash -c 'for model in glm5.2 dsv4.1-flash; do for i in 1 2; do
          for flag in "" --decoded-scales; do echo "#### moejit_bench_moe --model $model $flag";
            moejit_bench_moe --model $model $flag || exit 1; done; done; done'
      # The consumers' issue rate with and without (ncu, GLM5.2 B = 32, one compute launch each).
      run ncu-decoded.log bash -c 'for flag in "" --decoded-scales; do echo "#### $flag";
          ncu --clock-control none -k regex:moe_compute --launch-skip 30 --launch-count 1 --metrics \
            smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,gpu__time_duration.sum,dram__cycles_active.avg.pct_of_peak_sustained_elapsed \
            moejit_bench_moe --model glm5.2 --batches 32 $flag || exit 1; done'
      ;;
    trace)
      for model in glm5.2 dsv4.1-flash; do
        run "trace-$model.log" moejit_bench_moe --model "$model" --batches 1,2,4,8 --trace-csv "$LOGS"
      done
      ;;
    small-b)
      for model in glm5.2 dsv4.1-flash; do
        run "run-units-$model.log" moejit run --model "$model" --batch 2 --schedule units
        run "run-tile8-$model.log" moejit run --model "$model" --batch 8 --tile-n 8
        run "run-stages7-$model.log" moejit run --model "$model" --batch 8 --stages 7
      done
      run bench-small-b.log bash -c 'for i in 1 2; do for model in glm5.2 dsv4.1-flash; do
          echo "#### moejit_bench_moe --model $model --schedule stream,units --batches 1,2,4"
          moejit_bench_moe --model $model --schedule stream,units --batches 1,2,4 || exit 1
          echo "#### moejit_bench_moe --model $model --no-pdl --batches 1,2,4"
          moejit_bench_moe --model $model --no-pdl --batches 1,2,4 || exit 1
          for v in "" "--tile-n 8" "--stages 7"; do echo "#### moejit_bench_moe --model $model $v --batches 8"
            moejit_bench_moe --model $model $v --batches 8 || exit 1; done; done; done'
      ;;
    # SM partitions (green contexts) and layers planned for them: expert parallelism's ranks on one GPU.
    partitions)
      run gpu-tests-partitions.log moejit_gpu_tests --duration=true \
        -tc='SM partitions*,two layers planned for 64-SM partitions*'
      ;;
    ep)
      run gpu-tests-ep.log moejit_gpu_tests --duration=true -tc='expert parallelism*'
      run bench-ep.log moejit_bench_ep
      ;;
    ep2 | ep2-check | ep2-single | ep2-bench | ep2-kill)
      if [ -z "${MOEJIT_NCCL_LIBRARY:-}" ] && ! ldconfig -p | grep -q 'libnccl.so.2 '; then
        MOEJIT_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
        export MOEJIT_NCCL_LIBRARY
      fi
      export NCCL_NVLS_ENABLE=0  # never NVLink multicast (the device's rule; moejit does not use it)
      if [ "$step" = ep2 ] || [ "$step" = ep2-check ]; then
        run ep2-topology.log sh -c 'nvidia-smi topo -m; echo "MOEJIT_NCCL_LIBRARY=${MOEJIT_NCCL_LIBRARY:-}"'
        run ep2-check.log moejit_ep_nccl check --launch 2 ${EP2_CHECK_ARGS:-}
      fi
      if [ "$step" = ep2 ] || [ "$step" = ep2-single ]; then
        run ep2-check-single.log moejit_ep_nccl check --single-process 2 --model glm5.2 --batches 8 --routings 0,4,5 \
          --replays 10
      fi
      if [ "$step" = ep2 ] || [ "$step" = ep2-kill ]; then
        run ep2-kill.log moejit_ep_nccl soak --launch 2 --die-rank 1 --die-after 20
      fi
      if [ "$step" = ep2 ] || [ "$step" = ep2-bench ]; then run ep2-bench.log moejit_ep_nccl bench --launch 2; fi
      ;;
    *) echo "unknown step '$step' (tests tests-a tests-b tests-par memcheck plan bench acceptance python small-b trace decoded partitions ep ep2 ep2-check ep2-single ep2-bench ep2-kill)" | tee -a "$OUT/summary.txt" ;;
  esac
done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$LOGS"
