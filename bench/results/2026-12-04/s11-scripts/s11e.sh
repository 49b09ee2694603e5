#!/usr/bin/env bash
# s11e: paired rows in the short segments at B = 5-8 (kPairedShort, 8-column token tiles): runs, memcheck, ABBA
# against 16a0fd0's bench (B = 5-8 on 16-column split rows), B = 4-16.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for m in glm5.2 dsv4.1-flash; do for b in 5 6 8; do a="--model $m --batch $b"
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; done
  for a in "--model glm5.2 --batch 8 --shared-expert" "--model dsv4.1-flash --batch 7 --shared-expert" "--model gpt-oss-120b --batch 8" "--model glm5.2 --batch 6 --input-bf16" "--model dsv4.1-flash --batch 8 --input-bf16" "--model glm5.2 --batch 1 --tile-n 16"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; } > $OUT/s11e-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'PASS$' $OUT/s11e-run.log) PASS, $(grep -c FAIL $OUT/s11e-run.log) FAIL, $(grep -c 'error' $OUT/s11e-run.log) error"
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 8
  compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model dsv4.1-flash --batch 8; echo "rc=$?"; } > $OUT/s11e-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(grep -h 'ERROR SUMMARY\|rc=' $OUT/s11e-memcheck.log | paste -sd' ')"
{ for v in old new new old; do for m in glm5.2 dsv4.1-flash; do
    bin=moejit_bench_moe; [ $v = old ] && bin=$PWD/.device/old/moejit_bench_moe
    echo "#### $v: moejit_bench_moe --model $m --batches 4,5,6,8,16"; hdr moejit_bench_moe --model $m --batches 4,5,6,8,16; $bin --model $m --batches 4,5,6,8,16
  done; done; } > $OUT/s11e-ab.log 2>&1
echo "A/B at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6, $10}' $OUT/s11e-ab.log | sort -k2,2 -k3,3V -k1,1 | paste -sd' ' | fold -w 300
