#!/usr/bin/env bash
# s59: the partition cases (expert parallelism, green contexts, two 64-SM layers) alone on main's defaults
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "device: $D"; C=$(cat .device/COMMIT)
F='expert parallelism*,SM partitions*,two layers planned*'
{ echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: moejit_gpu_tests --duration=true -tc=\"$F\""
  MOEJIT_CACHE_DIR=/tmp/c-t timeout 400 .device/bin/moejit_gpu_tests --duration=true -tc="$F"; echo "exit $?"; } > $OUT/s59.log 2>&1
grep -h -B3 -A8 -E "ERROR:|FATAL ERROR" $OUT/s59.log | head -40; grep -hE "test cases|^exit|^[0-9.]+ s:" $OUT/s59.log
