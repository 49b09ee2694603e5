#!/usr/bin/env bash
# s63: on an H200, S53_NO_NCU=1 s53 (acceptance 1 and 2, ~180 s); on another card the planned pairing against
# --paired-rows off on 88 SMs (the H200's upper clock bracket of the proxy), B = 16-64, both models (~40 s).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "device: $D"; C=$(cat .device/COMMIT)
case $D in *H200*) S53_NO_NCU=1 bash .device/scripts/s53.sh; exit 0 ;; esac
for m in glm5.2 dsv4.1-flash; do echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
  echo "# command: moejit_bench_moe --model $m --batches 16,32,64 --sm-count 88 --paired-rows planned,off,planned"
  MOEJIT_CACHE_DIR=/tmp/c-a timeout 120 .device/bin/moejit_bench_moe --model $m --batches 16,32,64 --sm-count 88 \
    --paired-rows planned,off,planned; done > $OUT/s63-pair88.log 2>&1
grep -E "^(glm|dsv)" $OUT/s63-pair88.log
