#!/usr/bin/env bash
# s10c: the planned B = 1 kernel (step owners, 8 stages) against two warpgroups (5 stages); units-owners against
# stream at B = 2, 3; the owners' GPU matrix at 8 stages.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 1 --shared-expert" "--model dsv4.1-flash --batch 3 --schedule units"; do
    hdr moejit run $a; moejit run $a 2>&1 | grep -E "PASS|FAIL|cos|error" | tail -4; done; } > $OUT/s10c-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c PASS $OUT/s10c-run.log) PASS, $(grep -c FAIL $OUT/s10c-run.log) FAIL"
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do
    hdr moejit_bench_moe --model $m --batches 1 --schedule units --consumer-groups 2,3
    moejit_bench_moe --model $m --batches 1 --schedule units --consumer-groups 2,3
    hdr moejit_bench_moe --model $m --batches 2,3 --schedule stream,units --consumer-groups 3
    moejit_bench_moe --model $m --batches 2,3 --schedule stream,units --consumer-groups 3
  done; done; } > $OUT/s10c-ab.log 2>&1
echo "bench at ${SECONDS}s"
awk '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, $(NF-3), $(NF-1), $(NF-4), $6}' $OUT/s10c-ab.log | sort | paste -sd' ' | fold -w 300
hdr moejit_gpu_tests -tc="the unit schedule at B = 1-4 on three*" > $OUT/s10c-gpu-owners.log
timeout $((560 - SECONDS)) moejit_gpu_tests --duration=true -tc="the unit schedule at B = 1-4 on three*" >> $OUT/s10c-gpu-owners.log 2>&1
echo "gpu test rc=$? at ${SECONDS}s: $(grep -c 'cos_q=' $OUT/s10c-gpu-owners.log) checks"; tail -3 $OUT/s10c-gpu-owners.log
