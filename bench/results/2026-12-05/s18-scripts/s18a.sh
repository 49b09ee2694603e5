#!/usr/bin/env bash
# s18a (one H200): (1) each role's share of the layer's graph time (moejit_bench_moe --leave-out, main cff7d8a
# = 1714a81's kernels), both models; (2) the early trigger (2026-12-05/s18-early-trigger.patch: compute triggers
# its dependents once scheduled): checked, then ABBA against main at B = 1, 2, 4, 8, 256; (3) traces if time is left.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
E=$PWD/.device/early; EC=$(paste -sd' ' $E/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr "cff7d8a (kernels of 1714a81)" moejit_bench_moe --model $m --batches 1,2,4,8,256 --leave-out dispatch,finalize
    timeout 100 moejit_bench_moe --model $m --batches 1,2,4,8,256 --leave-out dispatch,finalize; echo "rc $?"; } > $OUT/s18a-leave-out-$m.log 2>&1
  grep -E "^(glm|dsv)|role by|without" $OUT/s18a-leave-out-$m.log
done
echo "leave-out at ${SECONDS}s"
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 2" "--model glm5.2 --batch 8" "--model dsv4.1-flash --batch 64" \
         "--model glm5.2 --batch 256" "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 4"; do
  hdr "$EC" early/moejit run $a; timeout 60 $E/moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s18a-early-run.log 2>&1
echo "early run at ${SECONDS}s: $(grep -c PASS $OUT/s18a-early-run.log) PASS $(grep -c FAIL $OUT/s18a-early-run.log) FAIL"
grep -q FAIL $OUT/s18a-early-run.log && exit 1
for m in glm5.2 dsv4.1-flash; do
  for b in main early early main; do
    [ $SECONDS -gt 280 ] && break
    bin=moejit_bench_moe; cm=cff7d8a; [ $b = early ] && bin=$E/moejit_bench_moe cm=$EC
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2,4,8,256; timeout 60 $bin --model $m --batches 1,2,4,8,256; } >> $OUT/s18a-early-abba.log 2>&1
  done
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s18a-early-abba.log
[ $SECONDS -gt 330 ] && exit 0
{ hdr "cff7d8a" moejit_bench_moe --model dsv4.1-flash --batches 2,4 --trace; timeout 60 moejit_bench_moe --model dsv4.1-flash --batches 2,4 --trace; } > $OUT/s18a-trace.log 2>&1
echo "trace at ${SECONDS}s"; grep -E "^(glm|dsv)|consumers done|GEMM1 share|K128|GEMM2 inputs|split-K|scheduled|first weight|exit" $OUT/s18a-trace.log
