#!/usr/bin/env bash
# s19a (one H200, ~500 s): (1) each role's share of the layer's graph time (moejit_bench_moe --leave-out, main
# .device/COMMIT: main, 1714a81's kernels), both models; (2) the unit schedule finalizing in its compute grid
# (2026-12-05/s18-fused-unit-finalize.patch, .device/fused): checked, then ABBA against main at B = 1, 2.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
F=$PWD/.device/fused; FC=$(paste -sd' ' $F/COMMIT); C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr "$C (kernels of 1714a81)" moejit_bench_moe --model $m --batches 1,2,4,8,256 --leave-out dispatch,finalize
    timeout 100 moejit_bench_moe --model $m --batches 1,2,4,8,256 --leave-out dispatch,finalize; echo "rc $?"; } > $OUT/s19a-leave-out-$m.log 2>&1
  grep -E "^(glm|dsv)|role by|without" $OUT/s19a-leave-out-$m.log
done
echo "leave-out at ${SECONDS}s"
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 2" \
         "--model dsv4.1-flash --batch 2 --schedule units" "--model glm5.2 --batch 4 --schedule units" \
         "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 1" "--model glm5.2 --batch 8"; do
  hdr "$FC" fused/moejit run $a; timeout 60 $F/moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s19a-fused-run.log 2>&1
echo "fused run at ${SECONDS}s: $(grep -c PASS $OUT/s19a-fused-run.log) PASS $(grep -c FAIL $OUT/s19a-fused-run.log) FAIL"
grep -q FAIL $OUT/s19a-fused-run.log && exit 1
( T="the unit schedule*,route ids outside*,a forward of B launches*"; hdr "$FC" fused/moejit_gpu_tests -tc="$T"
  timeout 200 $F/moejit_gpu_tests -tc="$T"; echo "rc $?" ) > $OUT/s19a-fused-gpu.log 2>&1
echo "gpu at ${SECONDS}s: $(tail -1 $OUT/s19a-fused-gpu.log) $(grep 'test cases:' $OUT/s19a-fused-gpu.log)"
grep -q "rc 0" $OUT/s19a-fused-gpu.log || exit 1
for m in glm5.2 dsv4.1-flash; do
  for b in main fused fused main; do
    [ $SECONDS -gt 500 ] && break
    bin=moejit_bench_moe; cm=$C; [ $b = fused ] && bin=$F/moejit_bench_moe cm=$FC
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2; timeout 40 $bin --model $m --batches 1,2; } >> $OUT/s19a-fused-abba.log 2>&1
  done
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s19a-fused-abba.log
