#!/usr/bin/env bash
# s73: on an H200 (~330 s): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path, and
# 75c91f4's bench, same lease), the token frame's A/B at B = 16-256 between, and the K-loop probe. On another
# card (~450 s): the whole GPU matrix on main's kernels (5 shards, the partition cases left out), then main's
# defaults on 80 SMs at B = 16-256.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s73-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s73-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in
  *H200*)
    b fast-1 $N $C
    b frame-off-on $N $C --batches 16,32,64,128,256 --token-frame off,on
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    b frame-small $N $C --batches 1,2,4,8 --token-frame off,on
    { hdr $C moejit_kloop_probe; $N/moejit_kloop_probe; } > $OUT/s73-probe.log 2>&1
    ;;
  *)
    PATH=$N:$PATH DIST=$PWD/.device GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 timeout 470 bash tools/gpu_session.sh tests-par > $OUT/s73-tests.log 2>&1
    echo "tests-par rc=$? at ${SECONDS}s"; tail -12 $OUT/summary.txt
    b sm80 $N $C --sm-count 80 --batches 16,32,64,128,256
    ;;
esac
cd $OUT && tar czf s73-logs.tgz --exclude='*.tgz' s73-* && ls
