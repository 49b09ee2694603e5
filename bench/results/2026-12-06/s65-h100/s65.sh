#!/usr/bin/env bash
# s65: on any card, the K-loop probe (rows 0-39, twice; rows 35-39 the token-frame promotion's ceiling);
# then, on an H200 only (~330 s): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path, and
# 75c91f4's bench in the same lease), with the pairing A/B (--paired-rows off,on / on,off at B = 16-256) between.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
{ hdr "$C+probe-tf" moejit_kloop_probe; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm --format=csv
  .device/bin/moejit_kloop_probe; .device/bin/moejit_kloop_probe; } > $OUT/s65-probe.log 2>&1
echo "probe at ${SECONDS}s"; grep -E "^gemm" $OUT/s65-probe.log | awk '{print $1,$2,$3,$4,$5,$6,$7,$8}' | sort | uniq -c | head -0
grep -E "^(gemm|#)" $OUT/s65-probe.log | head -45
case $D in *H200*) ;; *) echo "not an H200: the acceptance runs need one"; exit 0 ;; esac
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s65-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s65-$log.log
}
N=$PWD/.device/bin; O=$PWD/.device/old
b fast-1 $N $C
b pair-off-on $N $C --batches 16,32,64,128,256 --paired-rows off,on
b old $O 75c91f4
b exact $N $C --path exact
b fast-2 $N $C
b pair-on-off $N $C --batches 16,32,64,128,256 --paired-rows on,off
cd $OUT && tar czf s65-logs.tgz --exclude='*.tgz' s65-* && ls -la
