#!/usr/bin/env bash
# s10e: memcheck of B = 1's step owners (both models), then the default bench of both shapes, B = 1, 2 again.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch 1
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch 1; echo "rc=$?"; } > $OUT/s10e-memcheck-$m.log 2>&1
  echo "memcheck $m at ${SECONDS}s: $(grep -h 'rc=\|ERROR SUMMARY\|PASS\|FAIL' $OUT/s10e-memcheck-$m.log | paste -sd' ')"
done
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m; moejit_bench_moe --model $m; } > $OUT/s10e-bench-$m.log 2>&1
  echo "bench $m at ${SECONDS}s"
done
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m --batches 1,2; moejit_bench_moe --model $m --batches 1,2; } > $OUT/s10e-bench-$m-2.log 2>&1
done
echo "done at ${SECONDS}s"
awk '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, $6, $10, $(NF-1)}' $OUT/s10e-bench-*.log | paste -sd' ' | fold -w 300
