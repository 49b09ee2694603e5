#!/usr/bin/env bash
# s77: on an H200 (~370 s): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path, and
# 75c91f4's bench, same lease), the token frame's A/B at B = 16-256 and at B = 1-8, the K-loop probe; then, if
# time is left, main against db31458 (before the frame dispatch read each block once) at B = 16-256.
# On another card (~200 s): main against db31458 on 80 SMs (the H200's bytes a clock per SM), rounds
# db31458, main, main, db31458.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old; P=$PWD/.device/prev
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s77-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s77-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in
  *H200*)
    b fast-1 $N $C
    b frame-off-on $N $C --batches 16,32,64,128,256 --token-frame off,on
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    b frame-small $N $C --batches 1,2,4,8 --token-frame off,on
    { hdr $C moejit_kloop_probe; $N/moejit_kloop_probe; } > $OUT/s77-probe.log 2>&1
    if (( SECONDS < 440 )); then b prev-1 $P db31458 --batches 16,32,64,128,256; b main-3 $N $C --batches 16,32,64,128,256; fi
    ;;
  *)
    b prev-1 $P db31458 --sm-count 80 --batches 16,32,64,128,256
    b main-1 $N $C --sm-count 80 --batches 16,32,64,128,256
    b main-2 $N $C --sm-count 80 --batches 16,32,64,128,256
    b prev-2 $P db31458 --sm-count 80 --batches 16,32,64,128,256
    ;;
esac
cd $OUT && tar czf s77-logs.tgz s77-* && ls
