#!/usr/bin/env bash
# s14a: cut units (uncommitted on a5eb509): checks first, then units against the plan at B = 1-4.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 2 --schedule units" \
         "--model dsv4.1-flash --batch 2 --schedule units" "--model dsv4.1-flash --batch 4 --schedule units" \
         "--model glm5.2 --batch 3 --schedule units --consumer-groups 2"; do
  hdr moejit run $a; timeout 60 moejit run $a 2>&1 | tail -4; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s14a-run.log 2>&1
echo "run at ${SECONDS}s: $(grep -c PASS $OUT/s14a-run.log) PASS $(grep -c FAIL $OUT/s14a-run.log) FAIL"
grep -q FAIL $OUT/s14a-run.log && exit 1
( hdr moejit_gpu_tests -tc="a traced forward*"; timeout 100 moejit_gpu_tests -tc="a traced forward*"; echo "rc $?" ) > $OUT/s14a-gpu-trace.log 2>&1 &
( hdr moejit_gpu_tests -tc="the unit schedule at B = 1-4 on two*"; timeout 200 moejit_gpu_tests -tc="the unit schedule at B = 1-4 on two*"; echo "rc $?" ) > $OUT/s14a-gpu-2.log 2>&1 &
( hdr moejit_gpu_tests -tc="the unit schedule at B = 1-4 on three*"; timeout 200 moejit_gpu_tests -tc="the unit schedule at B = 1-4 on three*"; echo "rc $?" ) > $OUT/s14a-gpu-3.log 2>&1 &
wait
echo "gpu at ${SECONDS}s"; for f in trace 2 3; do echo "$f: $(tail -1 $OUT/s14a-gpu-$f.log) $(grep -c ' PASS' $OUT/s14a-gpu-$f.log) PASS, $(grep -c FAIL $OUT/s14a-gpu-$f.log) FAIL"; grep "test cases:" $OUT/s14a-gpu-$f.log; done
for r in 1 2; do
  for m in glm5.2 dsv4.1-flash; do
    { hdr moejit_bench_moe --model $m --batches 1,2,3,4 --schedule planned,units; timeout 90 moejit_bench_moe --model $m --batches 1,2,3,4 --schedule planned,units; } >> $OUT/s14a-bench.log 2>&1
  done
  echo "bench round $r at ${SECONDS}s"
done
grep -E "^(glm|dsv)" $OUT/s14a-bench.log
