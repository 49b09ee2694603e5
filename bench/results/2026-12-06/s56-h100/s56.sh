#!/usr/bin/env bash
# s56: on an H200, s53 (acceptance 1 and 2, the pairing A/B, B = 1-2, ncu unless S53_NO_NCU=1).
# On any other card (an H100), the H200 proxy (moejit_bench_moe --sm-count, .device/exp = main's bench): the
# default plan at B = 16-256 on 80 and 88 SMs (to set beside the H200's record), then the pairing A/B on 80 SMs
# in both orders (~300 s).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
case $D in *H200*) bash .device/scripts/s53.sh; exit 0 ;; esac
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
E=$PWD/.device/exp; CE=$(cat .device/exp/COMMIT)
b() {  # log args...
  local log=$1; shift
  { for m in glm5.2 dsv4.1-flash; do hdr $CE moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$CE timeout 200 $E/moejit_bench_moe --model $m "$@"; done; } > $OUT/s56-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)|^device" $OUT/s56-$log.log
}
B=16,32,64,128,256
b sm80 --batches $B --sm-count 80
b pair80-off-on --batches $B --sm-count 80 --paired-rows off,on
b sm88 --batches $B --sm-count 88
b pair80-on-off --batches $B --sm-count 80 --paired-rows on,off
b sm132 --batches $B
cd $OUT && tar czf s56-logs.tgz --exclude='*.tgz' s56-* && find . -maxdepth 1 -name 's56-*' ! -name '*.tgz' -delete
ls -la
