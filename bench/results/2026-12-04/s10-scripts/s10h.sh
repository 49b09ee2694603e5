#!/usr/bin/env bash
# s10h: paired split rows in the step owners' GEMM1 (B = 1): checks, the owners' GPU case, memcheck, then ABBA
# against 3756dc2's bench (old/: 16-column split rows).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 1 --shared-expert" "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 1" "--model glm5.2 --batch 3 --schedule units" "--model dsv4.1-flash --batch 4 --schedule units" "--model glm5.2 --batch 1 --input-bf16"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; } > $OUT/s10h-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'PASS$' $OUT/s10h-run.log) PASS, $(grep -c FAIL $OUT/s10h-run.log) FAIL"
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 1
  compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 1; echo "rc=$?"; } > $OUT/s10h-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(grep -h 'ERROR SUMMARY\|rc=' $OUT/s10h-memcheck.log | paste -sd' ')"
{ for v in old new new old; do for m in glm5.2 dsv4.1-flash; do
    bin=moejit_bench_moe; [ $v = old ] && bin=$PWD/.device/old/moejit_bench_moe
    echo "#### $v: moejit_bench_moe --model $m --batches 1"; $bin --model $m --batches 1
  done; done; } > $OUT/s10h-ab.log 2>&1
echo "A/B at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6, $10}' $OUT/s10h-ab.log | sort -k2,2 -k1,1 | paste -sd' ' | fold -w 300
hdr moejit_gpu_tests -tc="the unit schedule at B = 1-4 on three*" > $OUT/s10h-gpu-owners.log
timeout $((340 - SECONDS)) moejit_gpu_tests --duration=true -tc="the unit schedule at B = 1-4 on three*" >> $OUT/s10h-gpu-owners.log 2>&1
echo "gpu test rc=$? at ${SECONDS}s: $(grep 'cos_q=' $OUT/s10h-gpu-owners.log | grep -vc MESSAGE) checks"; tail -3 $OUT/s10h-gpu-owners.log
