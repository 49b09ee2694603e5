#!/usr/bin/env bash
# s14b: where cut units' time goes: the bench's trace at B = 1 (both shapes) and GLM5.2 B = 2 on units.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
mkdir -p $OUT/tr
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv tr; timeout 60 moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv $OUT/tr; } > $OUT/s14b-trace-$m.log 2>&1
done
cd $OUT && tar czf s14b-trace-csv.tgz tr && rm -rf tr
