#!/usr/bin/env bash
# s13b: where B = 1's compute time goes (ncu on the step owners' kernel), both models.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for m in dsv4.1-flash glm5.2; do moejit run --model $m --batch 1 > /dev/null 2>&1; done
N="ncu --clock-control none -k regex:moe_compute -s 1 -c 1"
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats"
for m in dsv4.1-flash glm5.2; do
  { hdr $N $S moejit run --model $m --batch 1; $N $S moejit run --model $m --batch 1; } > $OUT/s13b-ncu-$m.log 2>&1
done
$N --section SourceCounters --section WarpStateStats -o $OUT/s13b-dsv-b1 moejit run --model dsv4.1-flash --batch 1 > $OUT/s13b-ncu-src-run.log 2>&1
ncu -i $OUT/s13b-dsv-b1.ncu-rep --page source --csv --print-source sass > $OUT/s13b-src.csv 2>&1
gzip $OUT/s13b-src.csv
echo "done at ${SECONDS}s"; ls -la $OUT
