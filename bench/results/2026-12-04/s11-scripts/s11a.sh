#!/usr/bin/env bash
# s11a: paired split rows in the stream kernels at B = 2-4 (MoeLaunchPlan::paired_rows): runs, memcheck, then ABBA
# against 3756dc2's bench (old/: 16-column split rows at B >= 2), B = 1..8.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for m in glm5.2 dsv4.1-flash; do for b in 2 3 4; do a="--model $m --batch $b"
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error|paired" | tail -4; done; done
  for a in "--model glm5.2 --batch 4 --shared-expert" "--model dsv4.1-flash --batch 2 --shared-expert" "--model gpt-oss-120b --batch 3" "--model glm5.2 --batch 2 --input-bf16" "--model dsv4.1-flash --batch 4 --input-bf16" "--model glm5.2 --batch 4 --tile-n 16" "--model dsv4.1-flash --batch 1 --consumer-groups 2"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; } > $OUT/s11a-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'PASS$' $OUT/s11a-run.log) PASS, $(grep -c FAIL $OUT/s11a-run.log) FAIL"
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 4
  compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 4; echo "rc=$?"; } > $OUT/s11a-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(grep -h 'ERROR SUMMARY\|rc=' $OUT/s11a-memcheck.log | paste -sd' ')"
{ for v in old new new old; do for m in glm5.2 dsv4.1-flash; do
    bin=moejit_bench_moe; [ $v = old ] && bin=$PWD/.device/old/moejit_bench_moe
    echo "#### $v: moejit_bench_moe --model $m --batches 1,2,3,4,8"; $bin --model $m --batches 1,2,3,4,8
  done; done; } > $OUT/s11a-ab.log 2>&1
echo "A/B at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6, $10}' $OUT/s11a-ab.log | sort -k2,2 -k3,3V -k1,1 | paste -sd' ' | fold -w 300
