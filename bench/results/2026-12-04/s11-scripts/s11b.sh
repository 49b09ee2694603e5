#!/usr/bin/env bash
# s11b: where DSV4.1-Flash B = 2's compute time goes (ncu, paired stream kernel), and the unit schedule's step
# owners against the stream kernels at B = 2-4, now both on paired rows.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
moejit run --model dsv4.1-flash --batch 2 > /dev/null 2>&1  # warm the cache
N="ncu --clock-control none -k regex:moe_compute -s 1 -c 1"
{ hdr $N --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy moejit run --model dsv4.1-flash --batch 2
  $N --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy moejit run --model dsv4.1-flash --batch 2; } > $OUT/s11b-ncu.log 2>&1
echo "ncu at ${SECONDS}s rc=$?"
$N --section SourceCounters --section WarpStateStats -o $OUT/s11b-dsv-b2 moejit run --model dsv4.1-flash --batch 2 > $OUT/s11b-ncu-src-run.log 2>&1
ncu -i $OUT/s11b-dsv-b2.ncu-rep --page source --csv --print-source sass > $OUT/s11b-src.csv 2>&1
echo "src at ${SECONDS}s: $(wc -l < $OUT/s11b-src.csv) lines"; ls -la $OUT
