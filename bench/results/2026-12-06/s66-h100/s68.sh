#!/usr/bin/env bash
# s68 (~150 s): the SM-partition GPU cases alone, and memcheck of the token-frame kernels.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT); N=$PWD/.device/bin
echo "device: $D commit: $C"; export MOEJIT_CACHE_DIR=/tmp/c68
{ echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
  timeout 200 $N/moejit_gpu_tests --duration=true -tc="expert parallelism*,SM partitions*,two layers planned*"; echo "rc=$?"; } > $OUT/s68-partitions.log 2>&1
tail -4 $OUT/s68-partitions.log
for a in "glm5.2 16" "dsv4.1-flash 1 --input-bf16"; do
  set -- $a; m=$1 b=$2; shift 2
  { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch $b $*"
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 $N/moejit run --model $m --batch $b "$@"; echo "rc=$?"; } > $OUT/s68-memcheck-$m-$b.log 2>&1
  grep -E "ERROR SUMMARY|PASS|FAIL|rc=|token frame" $OUT/s68-memcheck-$m-$b.log | tail -5
done
