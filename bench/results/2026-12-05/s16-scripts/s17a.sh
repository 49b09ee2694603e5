#!/usr/bin/env bash
# s17a (one H200): the GEMM2 spill v3 (bench/results/2026-12-05/s17-gemm2-spill-v3.patch, built in .device/spill3:
# whole spills only, 4 items kept for the last unit's handoff, the planner's balance with the spill, so
# DSV4.1-Flash B = 2 plans units): checked, traced beside main's units, then benched against main ABBA at B = 1, 2.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S=$PWD/.device/spill3; SC=$(paste -sd' ' $S/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 2" \
         "--model dsv4.1-flash --batch 2" "--model dsv4.1-flash --batch 2 --shared-expert" \
         "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 2"; do
  hdr "$SC" spill3/moejit run $a; timeout 60 $S/moejit run $a 2>&1 | tail -4; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s17a-run.log 2>&1
echo "run at ${SECONDS}s: $(grep -c PASS $OUT/s17a-run.log) PASS $(grep -c FAIL $OUT/s17a-run.log) FAIL"
grep -q FAIL $OUT/s17a-run.log && exit 1
( hdr "$SC" spill3/moejit_gpu_tests -tc="the unit schedule*,route ids outside*"; timeout 200 $S/moejit_gpu_tests -tc="the unit schedule*,route ids outside*"; echo "rc $?" ) > $OUT/s17a-gpu.log 2>&1
echo "gpu at ${SECONDS}s: $(tail -1 $OUT/s17a-gpu.log) $(grep 'test cases:' $OUT/s17a-gpu.log)"
{
  hdr "$SC" spill3/moejit_bench_moe --model dsv4.1-flash --batches 2 --trace; timeout 40 $S/moejit_bench_moe --model dsv4.1-flash --batches 2 --trace
  hdr "$C" moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace; timeout 40 moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace
} > $OUT/s17a-trace.log 2>&1
echo "trace at ${SECONDS}s"; grep -E "^(glm|dsv)|consumers done|GEMM1 share|GEMM2 K128|GEMM2 inputs|first GEMM2|scheduled" $OUT/s17a-trace.log
for m in glm5.2 dsv4.1-flash; do
  for b in main spill3 spill3 main main spill3; do
    [ $SECONDS -gt 540 ] && break
    bin=moejit_bench_moe; cm=$C; [ $b = spill3 ] && bin=$S/moejit_bench_moe cm=$SC
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2; timeout 40 $bin --model $m --batches 1,2; } >> $OUT/s17a-abba.log 2>&1
  done
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s17a-abba.log
