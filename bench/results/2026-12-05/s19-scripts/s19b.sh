#!/usr/bin/env bash
# s19b (one H200, ~400 s): the early trigger (2026-12-05/s18-early-trigger.patch, .device/early): checked, then
# ABBA against main at B = 1, 2, 4, 8, 256; a DSV4.1-Flash B = 2, 4 trace of main if time is left.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
E=$PWD/.device/early; EC=$(paste -sd' ' $E/COMMIT); C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 2" "--model glm5.2 --batch 8" "--model dsv4.1-flash --batch 64" \
         "--model glm5.2 --batch 256" "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 4"; do
  hdr "$EC" early/moejit run $a; timeout 60 $E/moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s19b-early-run.log 2>&1
echo "early run at ${SECONDS}s: $(grep -c PASS $OUT/s19b-early-run.log) PASS $(grep -c FAIL $OUT/s19b-early-run.log) FAIL"
grep -q FAIL $OUT/s19b-early-run.log && exit 1
for m in glm5.2 dsv4.1-flash; do
  for b in main early early main; do
    [ $SECONDS -gt 400 ] && break
    bin=moejit_bench_moe; cm=$C; [ $b = early ] && bin=$E/moejit_bench_moe cm=$EC
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2,4,8,256; timeout 60 $bin --model $m --batches 1,2,4,8,256; } >> $OUT/s19b-early-abba.log 2>&1
  done
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s19b-early-abba.log
[ $SECONDS -gt 480 ] && exit 0
{ hdr "$C" moejit_bench_moe --model dsv4.1-flash --batches 2,4 --trace; timeout 60 moejit_bench_moe --model dsv4.1-flash --batches 2,4 --trace; } > $OUT/s19b-trace.log 2>&1
echo "trace at ${SECONDS}s"; grep -E "^(glm|dsv)|consumers done|GEMM1 share|K128|GEMM2 inputs|split-K|scheduled|first weight|exit" $OUT/s19b-trace.log
