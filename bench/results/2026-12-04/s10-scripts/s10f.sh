#!/usr/bin/env bash
# s10f: the default bench of both shapes again (acceptance 1's second run), then the per-CTA trace CSVs at B = 1-8.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m; moejit_bench_moe --model $m; } > $OUT/s10f-bench-$m.log 2>&1
done
echo "bench at ${SECONDS}s"
awk '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{print $1, "B="$2, $6, $10, $(NF-1)}' $OUT/s10f-bench-*.log | paste -sd' ' | fold -w 300
mkdir -p $OUT/trace
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m --batches 1,2,4,8 --trace-csv $OUT/trace; moejit_bench_moe --model $m --batches 1,2,4,8 --trace-csv $OUT/trace; } > $OUT/trace/s10f-trace-$m.log 2>&1
  echo "trace $m rc=$? at ${SECONDS}s"
done
ls $OUT/trace | head -20; du -sh $OUT/trace
