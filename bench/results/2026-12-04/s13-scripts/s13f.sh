#!/usr/bin/env bash
# s13f: issue 11's acceptance 1 on 48f76c6 (default options, both shapes), then GLM5.2 B = 1 on deeper rings.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m; timeout 170 moejit_bench_moe --model $m; } > $OUT/s13f-bench-$m.log 2>&1
  echo "$m at ${SECONDS}s"
done
for s in 10 12; do
  [ $SECONDS -gt 340 ] && break
  { hdr moejit_bench_moe --model glm5.2 --batches 1 --stages $s; timeout 60 moejit_bench_moe --model glm5.2 --batches 1 --stages $s; } >> $OUT/s13f-b1-stages.log 2>&1
  echo "stages $s at ${SECONDS}s"
done
