#!/usr/bin/env bash
# s13e: the activation warps without skip waits: correctness, ncu at B = 1 (the replay hung on s13c's build), memcheck.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
{ for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model dsv4.1-flash --batch 2" "--model glm5.2 --batch 2" \
           "--model glm5.2 --batch 4" "--model dsv4.1-flash --batch 8" "--model glm5.2 --batch 64" "--model dsv4.1-flash --batch 256" \
           "--model glm5.2 --batch 1 --shared-expert" "--model gpt-oss-120b --batch 2" "--model glm5.2 --batch 1 --stages 4" \
           "--model dsv4.1-flash --batch 4 --path exact"; do
    hdr moejit run $a; timeout 100 moejit run $a 2>&1 | grep -E "PASS|FAIL|rror|activation" ; done; } > $OUT/s13e-run.log 2>&1
echo "run at ${SECONDS}s: $(grep -c PASS $OUT/s13e-run.log) PASS $(grep -c FAIL $OUT/s13e-run.log) FAIL"
N="ncu --clock-control none -k regex:moe_compute -s 1 -c 1"
{ hdr $N --section SourceCounters --section WarpStateStats --section SpeedOfLight moejit run --model glm5.2 --batch 1
  timeout 150 $N --section SourceCounters --section WarpStateStats --section SpeedOfLight -o $OUT/s13e-glm-b1 moejit run --model glm5.2 --batch 1; echo "rc $?"; } > $OUT/s13e-ncu-run.log 2>&1
echo "ncu at ${SECONDS}s: $(tail -1 $OUT/s13e-ncu-run.log)"
if [ -f $OUT/s13e-glm-b1.ncu-rep ]; then
  ncu -i $OUT/s13e-glm-b1.ncu-rep --page source --csv --print-source sass > $OUT/s13e-src.csv 2>&1; gzip $OUT/s13e-src.csv
  ncu -i $OUT/s13e-glm-b1.ncu-rep > $OUT/s13e-ncu.log 2>&1; rm $OUT/s13e-glm-b1.ncu-rep
fi
{ hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 1
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model glm5.2 --batch 1 2>&1 | grep -E "PASS|FAIL|ERROR SUMMARY|rror"; echo "rc ${PIPESTATUS[0]}"; } > $OUT/s13e-memcheck.log 2>&1
echo "memcheck at ${SECONDS}s: $(tail -2 $OUT/s13e-memcheck.log | tr '\n' ' ')"
