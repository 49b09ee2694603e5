#!/usr/bin/env bash
# s14d: the traces s14c meant to take (main a5eb509 beside the cut-units build), the exact path's table
# (acceptance 2), then the partition and expert-parallelism steps on main.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
mkdir -p $OUT/tr/main $OUT/tr/cut
for m in glm5.2 dsv4.1-flash; do
  { hdr "$C" moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv tr/main; timeout 60 moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv $OUT/tr/main; } > $OUT/s14d-trace-main-$m.log 2>&1
  { hdr "$(cat .device/cut/COMMIT)" moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv tr/cut; timeout 60 .device/cut/moejit_bench_moe --model $m --batches 1,2 --schedule units --trace-csv $OUT/tr/cut; } > $OUT/s14d-trace-cut-$m.log 2>&1
done
echo "traces at ${SECONDS}s"
(cd $OUT && tar czf s14d-trace-csv.tgz tr && rm -rf tr)
for m in glm5.2 dsv4.1-flash; do
  { hdr "$C" moejit_bench_moe --model $m --path exact; timeout 150 moejit_bench_moe --model $m --path exact; } > $OUT/s14d-bench-exact-$m.log 2>&1
done
echo "exact at ${SECONDS}s"
DIST=.device OUT=$OUT/m timeout $((560 - SECONDS)) tools/gpu_session.sh partitions ep
echo "partitions+ep at ${SECONDS}s"
cat $OUT/m/summary.txt
(cd $OUT && tar czf s14d-ep-logs.tgz m && rm -rf m)
