#!/usr/bin/env bash
# s13c: the activation producer on 3 warps (the new plan) against 1 (the old), ABBA per model; correctness first.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model dsv4.1-flash --batch 2" "--model glm5.2 --batch 2" \
           "--model glm5.2 --batch 4" "--model dsv4.1-flash --batch 8" "--model glm5.2 --batch 64" "--model dsv4.1-flash --batch 256" \
           "--model glm5.2 --batch 1 --shared-expert" "--model gpt-oss-120b --batch 2"; do
    hdr moejit run $a; timeout 120 moejit run $a 2>&1 | grep -E "PASS|FAIL|error|plan " ; done; } > $OUT/s13c-run.log 2>&1
echo "run at ${SECONDS}s: $(grep -c PASS $OUT/s13c-run.log) PASS $(grep -c FAIL $OUT/s13c-run.log) FAIL"
for m in glm5.2 dsv4.1-flash; do
  for r in 1 2; do
    A="--model $m --batches 1,2,4,8,16,64,256 --activation-warps 1,0"
    [ $r = 2 ] && A="--model $m --batches 1,2,4,8,16,64,256 --activation-warps 0,1"
    { hdr moejit_bench_moe $A; timeout 200 moejit_bench_moe $A; } >> $OUT/s13c-ab-$m.log 2>&1
    echo "$m round $r at ${SECONDS}s"
  done
done
