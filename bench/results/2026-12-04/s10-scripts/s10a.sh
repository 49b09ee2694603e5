#!/usr/bin/env bash
# s10a: the unit schedule's step owners (3 warpgroups) and the compute role's early launch_dependents.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for m in glm5.2 dsv4.1-flash; do for b in 1 2 3 4; do
    a="--model $m --batch $b --schedule units --consumer-groups 3"
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4
  done; done
  for a in "--model glm5.2 --batch 1 --shared-expert --schedule units --consumer-groups 3" "--model dsv4.1-flash --batch 4 --shared-expert --schedule units --consumer-groups 3" "--model gpt-oss-120b --batch 1 --schedule units --consumer-groups 3" "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 2"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done
} > $OUT/s10a-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c PASS $OUT/s10a-run.log) PASS, $(grep -c FAIL $OUT/s10a-run.log) FAIL"
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do
    hdr moejit_bench_moe --model $m --batches 1,2,4 --schedule units --consumer-groups 2,3
    moejit_bench_moe --model $m --batches 1,2,4 --schedule units --consumer-groups 2,3
  done; done; } > $OUT/s10a-owners.log 2>&1
echo "owners at ${SECONDS}s"
awk '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, $(NF-2), $6, $10}' $OUT/s10a-owners.log | sort | paste -sd' ' | fold -w 300
{ for v in old new new old; do for m in glm5.2 dsv4.1-flash; do
    bin=moejit_bench_moe; [ $v = old ] && bin=$PWD/.device/old/moejit_bench_moe
    echo "#### $v: moejit_bench_moe --model $m --batches 1,2"; $bin --model $m --batches 1,2
  done; done; } > $OUT/s10a-pdl-ab.log 2>&1
echo "pdl A/B at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6, $10}' $OUT/s10a-pdl-ab.log | sort -k2,2 -k3,3V -k1,1 | paste -sd' ' | fold -w 300
hdr moejit_gpu_tests -tc="the unit schedule at B = 1-4 on three*" > $OUT/s10a-gpu-owners.log
timeout $((560 - SECONDS)) moejit_gpu_tests --duration=true -tc="the unit schedule at B = 1-4 on three*" >> $OUT/s10a-gpu-owners.log 2>&1
echo "gpu test rc=$? at ${SECONDS}s: $(grep -c 'cos_q=' $OUT/s10a-gpu-owners.log) checks"; tail -4 $OUT/s10a-gpu-owners.log
