#!/usr/bin/env bash
# s13d: B = 1 with three activation warps: ncu source counters (GLM5.2) and the per-CTA trace (both models).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
moejit run --model glm5.2 --batch 1 > /dev/null 2>&1
N="ncu --clock-control none -k regex:moe_compute -s 1 -c 1"
$N --section SourceCounters --section WarpStateStats --section SpeedOfLight -o $OUT/s13d-glm-b1 moejit run --model glm5.2 --batch 1 > $OUT/s13d-ncu-run.log 2>&1
ncu -i $OUT/s13d-glm-b1.ncu-rep --page source --csv --print-source sass > $OUT/s13d-src.csv 2>&1; gzip $OUT/s13d-src.csv
ncu -i $OUT/s13d-glm-b1.ncu-rep > $OUT/s13d-ncu.log 2>&1
echo "ncu at ${SECONDS}s"
mkdir -p $OUT/s13d-trace
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m --batches 1 --trace-csv DIR; timeout 100 moejit_bench_moe --model $m --batches 1 --trace-csv $OUT/s13d-trace; } >> $OUT/s13d-trace.log 2>&1
done
echo "done at ${SECONDS}s"
