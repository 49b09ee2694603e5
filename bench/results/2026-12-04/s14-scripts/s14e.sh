#!/usr/bin/env bash
# s14e: moejit_bench_ep failed on a5eb509 (s14d: "unspecified launch failure" at its first forward, R = 2, B = 1):
# which kernel, and over which R, B and model.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for a in "--ranks 2 --batches 1 --model glm5.2" "--ranks 4 --batches 1 --model glm5.2" "--ranks 2 --batches 8 --model glm5.2" \
         "--ranks 2 --batches 1 --model dsv4.1-flash" "--ranks 2 --batches 64 --model glm5.2"; do
  hdr moejit_bench_ep $a; timeout 60 moejit_bench_ep $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done > $OUT/s14e-ep.log 2>&1
cat $OUT/s14e-ep.log
{ hdr compute-sanitizer --tool memcheck --print-limit 4 moejit_bench_ep --ranks 2 --batches 1 --model glm5.2
  timeout 300 compute-sanitizer --tool memcheck --print-limit 4 moejit_bench_ep --ranks 2 --batches 1 --model glm5.2 2>&1 | head -80; } > $OUT/s14e-memcheck.log 2>&1
head -60 $OUT/s14e-memcheck.log
