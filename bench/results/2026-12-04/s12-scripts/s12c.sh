#!/usr/bin/env bash
# s12c: the 4-stage ring at B <= 8 (uncommitted on ba7ab8a): runs and memcheck at B = 2-4; ring depths at
# B = 16, 32; two consumer warpgroups and the unit schedule at B = 2, 4.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
b() { echo "#### $*"; hdr moejit_bench_moe "$@"; moejit_bench_moe "$@"; }
mkdir -p $OUT
{ for m in glm5.2 dsv4.1-flash; do for bb in 2 3 4; do a="--model $m --batch $bb"
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error|stages" | tail -5; done; done
  for a in "--model glm5.2 --batch 3 --shared-expert" "--model gpt-oss-120b --batch 2" "--model dsv4.1-flash --batch 4 --input-bf16" "--model glm5.2 --batch 1 --consumer-groups 2"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error|stages" | tail -5; done; } > $OUT/s12c-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'PASS$' $OUT/s12c-run.log) PASS, $(grep -c FAIL $OUT/s12c-run.log) FAIL, $(grep -ci 'error' $OUT/s12c-run.log) error"
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 4
  compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 4; echo "rc=$?"; } > $OUT/s12c-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(grep -h 'ERROR SUMMARY\|rc=' $OUT/s12c-memcheck.log | paste -sd' ')"
{ for r in 1 2; do for s in 4 5 6 0; do for m in glm5.2 dsv4.1-flash; do
    if [ $s = 0 ]; then b --model $m --batches 16,32; else b --model $m --batches 16,32 --stages $s; fi; done; done; done; } > $OUT/s12c-stages-mid.log 2>&1
echo "stages mid at ${SECONDS}s"
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 2,4 --consumer-groups 2; b --model $m --batches 2,4; done
    b --model glm5.2 --batches 1,2 --consumer-groups 2 --schedule units --stages 4
    b --model glm5.2 --batches 1,2 --consumer-groups 2 --schedule units --stages 5
    b --model glm5.2 --batches 2 --schedule units; done; } > $OUT/s12c-small.log 2>&1
echo "small at ${SECONDS}s"
for f in stages-mid small; do awk '/^#### /{v=$0} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{n=split(v,a," "); s=""; for(i=2;i<=n;i++) if(a[i]=="--stages"||a[i]=="--consumer-groups"||a[i]=="--schedule") s=s a[i]"="a[i+1]; print $1, "B="$2, $11, $12, $13, s":", $6" ("$10")"}' $OUT/s12c-$f.log | sort | awk '{k=$1" "$2" "$3" "$4" "$5" "$6; v[k]=v[k]" "$7" "$8} END{for(k in v) print k v[k]}' | sort -k1,1 -k2,2V; done
