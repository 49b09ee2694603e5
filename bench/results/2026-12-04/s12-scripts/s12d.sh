#!/usr/bin/env bash
# s12d: 71be32c (4-stage ring to B = 8, 5 to B = 32, units at B = 2 where balanced): runs, memcheck of GLM5.2
# B = 2 (units, two warpgroups), both default sweeps twice, and PDL at B = 3-4 against the plan (no PDL).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
b() { echo "#### $*"; hdr moejit_bench_moe "$@"; moejit_bench_moe "$@"; }
mkdir -p $OUT
{ for a in "--model glm5.2 --batch 2" "--model glm5.2 --batch 2 --shared-expert" "--model dsv4.1-flash --batch 2" "--model glm5.2 --batch 16" "--model dsv4.1-flash --batch 32" "--model gpt-oss-120b --batch 2" "--model glm5.2 --batch 2 --input-bf16"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cosine|rror|^stages|^schedule" | tail -6; done; } > $OUT/s12d-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'PASS$' $OUT/s12d-run.log) PASS, $(grep -c FAIL $OUT/s12d-run.log) FAIL"
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 2
  compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 2; echo "rc=$?"; } > $OUT/s12d-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(grep -h 'ERROR SUMMARY\|rc=' $OUT/s12d-memcheck.log | paste -sd' ')"
for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m > $OUT/s12d-bench-$m-$r.log 2>&1; done; done
echo "sweeps at ${SECONDS}s"
for m in glm5.2 dsv4.1-flash; do for r in 1 2; do awk -v t="$m-$r" '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{s=s" "$2":"$6"("$10")"} END{print t s}' $OUT/s12d-bench-$m-$r.log; done; done
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 3,4 --pdl; b --model $m --batches 3,4; done; done; } > $OUT/s12d-pdl.log 2>&1
echo "pdl at ${SECONDS}s"
awk '/^#### /{v=($0 ~ /--pdl/) ? "pdl" : "plan"} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, v, $6}' $OUT/s12d-pdl.log | sort | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4} END{for(k in v) print k":"v[k]}' | sort
