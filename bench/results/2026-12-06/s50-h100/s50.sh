#!/usr/bin/env bash
# s50 (~150 s): acceptance 1 and 2 on the float4-granule kernels: moejit_bench_moe with default options on both
# models, twice; the exact path on both models at every B; 75c91f4's bench on both models, in one lease; then the fast path's
# schedules at B = 1-2 (the granules make stream's cut items cheaper: does stream now beat units at B = 1?).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
N=$PWD/.device/bin; O=$PWD/.device/old; CN=$(cat .device/COMMIT)
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 100 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s50-$log.log 2>&1
  echo "$log done at ${SECONDS}s"
}
b fast-1 $N $CN; b old $O 75c91f4; b exact $N $CN --path exact; b fast-2 $N $CN
b schedules $N $CN --batches 1,2 --schedule planned,stream,units  # stream vs units at B = 1-2 with the granules
cd $OUT && tar czf s50-logs.tgz s50-*.log && rm s50-*.log
