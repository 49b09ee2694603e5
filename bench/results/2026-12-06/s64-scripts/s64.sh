#!/usr/bin/env bash
# s64 (a short lease, an H200 only, ~80 s): acceptance 1's table once (main's defaults, both models, B = 1-256),
# then the pairing A/B at B = 16-64 (planned against off).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $D in *H200*) ;; *) echo "device: $D: not an H200, nothing run"; exit 0 ;; esac
echo "device: $D"; C=$(cat .device/COMMIT)
b() {  # log args...
  local log=$1; shift
  { for m in glm5.2 dsv4.1-flash; do echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
      echo "# command: moejit_bench_moe --model $m $*"
      MOEJIT_CACHE_DIR=/tmp/c-b timeout 100 .device/bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s64-$log.log 2>&1
  echo "$log at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s64-$log.log
}
b fast
b pair --batches 16,32,64 --paired-rows off,planned
