#!/usr/bin/env bash
# s134 (LIMIT: the call's seconds). An H200 -> acceptance 1 and 2 on main (.device/mn = ae580bf: 4156253's kernels; its
# bench's run() split into steps, not yet run on a GPU: a first traced GLM5.2 B = 1 run checks it, else ca12990's bench,
# mn/prev), then
# trace-gemm2's B = 1 traces (.device/tg = 9fc4b31), unit-pieces (.device/up = 0d6fec8) against main at B = 1-2,
# A B A B, then up's unit-schedule GPU cases.
# Any other card -> main's GPU cases of the layer's kernels, graphs and sharing (0833dd6, 26e4209 moved MoeLayer's kernels
# into moe_layer_kernels.cpp; e4afc65, d666312 split their test files), trace-gemm2's B = 1 traces and its traced-forward
# case, then main against unit-pieces at B = 1-2 on 80 SMs of a DSV4.1-Flash with I = 1408
# (the H200's B = 1 balance, consumer-bound), A B A B.
# Each part starts only while the call's time allows.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
L=${LIMIT:-600}
# One bench of build v (mn, up) at B = 1-2 with options $2 (split into words), under 60 s and the call's time left.
b() { local v=$1 t=$((L-10-SECONDS)); hdr $v "moejit_bench_moe $2 --batches 1,2"
  [ $t -gt 5 ] && MOEJIT_CACHE_DIR=/tmp/c-$v timeout $((t < 60 ? t : 60)) .device/$v/bin/moejit_bench_moe $2 --batches 1,2; }
left() { [ $SECONDS -lt $1 ] || { echo "skipped $2 at ${SECONDS}s" | tee -a $OUT/skipped.txt; return 1; }; }
# Branch trace-gemm2 (.device/tg): B = 1 of both shapes traced with its two new milestones (the owners' GEMM1 K-loop
# done, the unit's GEMM2 inputs in), which split B = 1's GEMM2 phase into the unit's handoff and its steps.
tg() { mkdir -p $OUT/trace-tg; for m in glm5.2 dsv4.1-flash; do left $((L-40)) tg-$m || return
  { hdr tg "moejit_bench_moe --model $m --batches 1 --trace-csv \$OUT/trace-tg"
    MOEJIT_CACHE_DIR=/tmp/c-tg timeout 60 .device/tg/bin/moejit_bench_moe --model $m --batches 1 --trace-csv $OUT/trace-tg; } >> $OUT/trace-tg.log 2>&1
  done; grep -E "^(glm|dsv)|GEMM1 K-loop|GEMM1 share|GEMM2 inputs in|consumers done" $OUT/trace-tg.log; }
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$1/COMMIT)  device: $D"; echo "# command: $2"; }
case $D in *H200*)
  mkdir -p $OUT/trace
  { hdr mn "moejit_bench_moe --model glm5.2 --batches 1 --trace-csv \$OUT/trace"
    MOEJIT_CACHE_DIR=/tmp/c-mn timeout 120 .device/mn/bin/moejit_bench_moe --model glm5.2 --batches 1 --trace-csv $OUT/trace; } > $OUT/smoke.log 2>&1 ||
    { cp .device/mn/prev/moejit_bench_moe .device/mn/bin/ && cp .device/mn/prev/COMMIT .device/mn/COMMIT &&
      echo "ae580bf's bench failed: ca12990's runs (.device/mn/COMMIT now says so)" | tee -a $OUT/skipped.txt; }
  DEVICE="$D" DIST=.device/mn OUT=$OUT/acc timeout -k 5 $(( L-10-SECONDS < 260 ? L-10-SECONDS : 260 )) tools/gpu_session.sh acceptance > $OUT/acc.log 2>&1
  echo "acceptance exit $? at ${SECONDS}s"; cat $OUT/acc/summary.txt 2>/dev/null
  tg
  for r in 1 2; do left $((L-150-60*(r-1))) ab-$r || break
    for m in dsv4.1-flash glm5.2; do for v in mn up; do b $v "--model $m" >> $OUT/ab-$v.log 2>&1; done; done
    echo "ab round $r done at ${SECONDS}s"; done
  for v in mn up; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
    echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/ab-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done | tee $OUT/ab-summary.txt
  if left $((L-60)) gpu-cases; then
    { hdr up "moejit_gpu_tests --duration=true -tc='a traced forward*,the unit schedule at B = 1-4 on two*'"
      MOEJIT_CACHE_DIR=/tmp/c-up timeout $((L-12-SECONDS)) .device/up/bin/moejit_gpu_tests --duration=true -tc="a traced forward*,the unit schedule at B = 1-4 on two*"; echo "exit $?"; } > $OUT/gpu-up.log 2>&1
    grep -E "test cases|assertions|^exit|ERROR" $OUT/gpu-up.log | tail -8; fi ;;
*)
  T='a layer*,a forward*,a graph captured*,8 layers*,8 threads*,a batch size*,a captured decode*,a traced forward*,two layers planned*,buffers over*,the unit schedule at B = 1-4 on two*'
  { hdr mn "moejit_gpu_tests --duration=true -tc='$T'"
    MOEJIT_CACHE_DIR=/tmp/c-mn timeout 200 .device/mn/bin/moejit_gpu_tests --duration=true -tc="$T"; echo "exit $?"; } > $OUT/gpu-mn.log 2>&1
  grep -E "test cases|assertions|^exit|ERROR" $OUT/gpu-mn.log | tail -8
  tg
  if left $((L-120)) gpu-tg; then
    { hdr tg "moejit_gpu_tests --duration=true -tc='a traced forward*'"
      MOEJIT_CACHE_DIR=/tmp/c-tg timeout 60 .device/tg/bin/moejit_gpu_tests --duration=true -tc="a traced forward*"; echo "exit $?"; } > $OUT/gpu-tg.log 2>&1
    grep -E "test cases|assertions|^exit|ERROR" $OUT/gpu-tg.log | tail -4; fi
  # The H200's B = 1 on this card: 108 units (DSV4.1-Flash) on 132 CTAs leave 24 idle, consumer-bound. Here 80 SMs
  # ask each SM for the bytes a clock the H200 asks of 132, and a DSV4.1-Flash with I = 1408 gives 66 units for
  # them (14 idle, the same 0.82 of the grid; 40 + 20 steps a unit, as DSV4.1-Flash's).
  P="--config .device/scripts/dsv-i1408.json --sm-count 80"
  for r in 1 2; do left $((L-70)) ab80-$r || break
    for v in mn up; do b $v "$P" >> $OUT/ab80-$v.log 2>&1; done
    echo "ab80 round $r done at ${SECONDS}s"; done
  for v in mn up; do for bb in 1 2; do
    echo "$v dsv-i1408 B=$bb sm80: $(grep -hE "^dsv-i1408 +$bb " $OUT/ab80-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done | tee $OUT/ab80-summary.txt ;;
esac
echo "end at ${SECONDS}s"
