#!/usr/bin/env bash
# s14c: the bench's trace at B = 1-2 of main (a5eb509) beside the cut-units build (s14a-cut-units.patch), then
# the whole GPU matrix on main (tests-par, 6 shards, the partition cases left for the next call).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
mkdir -p $OUT/tr
for m in glm5.2 dsv4.1-flash; do
  { hdr "$C" moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv tr/main; timeout 60 moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv $OUT/tr/main; } > $OUT/s14c-trace-main-$m.log 2>&1
  { hdr "$(cat .device/cut/COMMIT)" moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv tr/cut; timeout 60 .device/cut/moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv $OUT/tr/cut; } > $OUT/s14c-trace-cut-$m.log 2>&1
done
echo "traces at ${SECONDS}s"
(cd $OUT && tar czf s14c-trace.tgz s14c-trace-*.log tr && rm -rf tr)
GPU_TEST_SHARDS=6 GPU_TEST_PARTITIONS=0 DIST=.device OUT=$OUT/m tools/gpu_session.sh tests-par
echo "matrix at ${SECONDS}s"
(cd $OUT && tar czf s14c-matrix-logs.tgz m && cp m/summary.txt s14c-matrix-summary.txt && rm -rf m)
