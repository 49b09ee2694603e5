#!/usr/bin/env bash
# s60: on an H200, S53_NO_NCU=1 s53 (acceptance 1 and 2 on .device/bin = main's planned pairing, ~180 s); on any
# card, memcheck of the kernels the planned pairing added (16-column tiles, short segments paired: GLM5.2 B = 16,
# DSV4.1-Flash B = 64 with the shared expert).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "device: $D"; C=$(cat .device/COMMIT)
case $D in *H200*) S53_NO_NCU=1 bash .device/scripts/s53.sh ;; esac
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mc() {  # log args...
  local log=$1; shift
  { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: compute-sanitizer --tool memcheck --error-exitcode 1 moejit run $*"
    MOEJIT_CACHE_DIR=/tmp/c-m timeout 200 $SAN --tool memcheck --error-exitcode 1 .device/bin/moejit run "$@"; echo "exit $?"; } > $OUT/s60-$log.log 2>&1
  echo "$log at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|^exit|paired' $OUT/s60-$log.log | tr '\n' ' ')"
}
mc glm16 --model glm5.2 --batch 16
mc dsv64-shared --model dsv4.1-flash --shared-expert --batch 64
