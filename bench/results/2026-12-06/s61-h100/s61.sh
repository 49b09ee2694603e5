#!/usr/bin/env bash
# s61: on an H200, S53_NO_NCU=1 s53 (acceptance 1 and 2 on .device/bin = main's planned pairing, ~180 s); on
# another card main's default table, both models, B = 1-256, twice (~70 s).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "device: $D"; C=$(cat .device/COMMIT)
case $D in *H200*) S53_NO_NCU=1 bash .device/scripts/s53.sh; exit 0 ;; esac
for r in 1 2; do
  { for m in glm5.2 dsv4.1-flash; do echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
      echo "# command: moejit_bench_moe --model $m"
      MOEJIT_CACHE_DIR=/tmp/c-b timeout 150 .device/bin/moejit_bench_moe --model $m; done; } > $OUT/s61-fast-$r.log 2>&1
  echo "round $r at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s61-fast-$r.log
done
