#!/usr/bin/env bash
# s79 (~250 s, H200 only): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path and
# 75c91f4's bench, same lease); then, if time is left, the token frame at B = 1-8. On another card: nothing.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old
case $D in *H200*) ;; *) echo "not an H200: nothing run"; exit 0;; esac
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s79-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s79-$log.log | awk '{print $1,$2,$6,$NF}'
}
b fast-1 $N $C
b old $O 75c91f4
b exact $N $C --path exact
b fast-2 $N $C
if (( SECONDS < 200 )); then b frame-small $N $C --batches 1,2,4,8 --token-frame off,on; fi
cd $OUT && tar czf s79-logs.tgz s79-*.log && rm -f s79-*.log; ls
