#!/usr/bin/env bash
# s49 (~330 s): the split-K partials in float4 granules (consecutive consumer threads adjacent) against the
# thread-major layout (base = 2f61c7e's kernels), both paths, in alternating rounds base/new/new/base; then the
# exact path against 75c91f4 at B = 1-4 (acceptance 2; a timing only on an H200).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
N=$PWD/.device/bin; BASE=$PWD/.device/base; O=$PWD/.device/old
CN=$(cat .device/COMMIT); CB=$(cat .device/base/COMMIT)
round() {  # name bin commit round
  { hdr "$3" "moejit_bench_moe --model M [--path exact --batches 1,2,4,8,16]"
    for m in glm5.2 dsv4.1-flash; do
      MOEJIT_CACHE_DIR=/tmp/c-$1 timeout 100 $2/moejit_bench_moe --model $m
      MOEJIT_CACHE_DIR=/tmp/c-$1 timeout 60 $2/moejit_bench_moe --model $m --path exact --batches 1,2,4,8,16; done; } > $OUT/s49-$1-$4.log 2>&1
  echo "$1 #$4 done at ${SECONDS}s"
}
round base $BASE $CB 1; round new $N $CN 1; round new $N $CN 2; round base $BASE $CB 2
for v in old new; do
  bin=$O; args=""; c=75c91f4; [ $v = new ] && bin=$N && args="--path exact" && c=$CN
  { hdr $c moejit_bench_moe $args --model dsv4.1-flash --batches 1,2,4
    MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 $bin/moejit_bench_moe $args --model dsv4.1-flash --batches 1,2,4; } > $OUT/s49-acc2-$v.log 2>&1
done
echo "acceptance 2 done at ${SECONDS}s"
grep -hE "^(glm5.2|dsv4.1-flash) " $OUT/s49-*.log | head -3
cd $OUT && tar czf s49-logs.tgz s49-*.log && rm s49-*.log
