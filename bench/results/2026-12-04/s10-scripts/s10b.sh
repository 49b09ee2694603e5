#!/usr/bin/env bash
# s10b: step owners (3 warpgroups) at ring depths 5, 8, 10 against two warpgroups at 5 (the plan), B = 1, 2.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for a in "--model glm5.2 --batch 1 --schedule units --consumer-groups 3 --stages 10" "--model dsv4.1-flash --batch 2 --schedule units --consumer-groups 3 --stages 8"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; } > $OUT/s10b-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c PASS $OUT/s10b-run.log) PASS, $(grep -c FAIL $OUT/s10b-run.log) FAIL"
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do
    for v in "--consumer-groups 2" "--consumer-groups 3 --stages 5" "--consumer-groups 3 --stages 8" "--consumer-groups 3 --stages 10"; do
      echo "#### $v"; hdr moejit_bench_moe --model $m --batches 1,2 --schedule units $v
      moejit_bench_moe --model $m --batches 1,2 --schedule units $v
  done; done; done; } > $OUT/s10b-stages.log 2>&1
echo "bench at ${SECONDS}s"
awk '/^####/{v=$3"/"$5} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, v, $(NF-3), $6}' $OUT/s10b-stages.log | sort | paste -sd' ' | fold -w 300
