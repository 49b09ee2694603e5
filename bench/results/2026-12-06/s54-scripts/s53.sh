#!/usr/bin/env bash
# s53 (~250 s, an H200 only): acceptance 1 and 2 on main's default kernels (identical SASS to c56e8d7's: .device/bin)
# with the pairing A/B (--paired-rows off,on at B = 16-256, the bench of .device/exp/COMMIT) between them, in
# alternating order; then B = 1-2 (schedules, trace, roles left out) and ncu of GLM5.2 B = 256 / DSV4.1-Flash B = 128
# (S53_NO_NCU=1 leaves ncu out: ~180 s, for a lease with less than ~450 s of device time).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $D in *H200*) ;; *) echo "device: $D: not an H200, nothing run"; exit 0 ;; esac
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
N=$PWD/.device/bin; O=$PWD/.device/old; E=$PWD/.device/exp; CN=$(cat .device/COMMIT); CE=$(cat .device/exp/COMMIT)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s53-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s53-$log.log
}
b fast-1 $N $CN
b pair-off-on $E $CE --batches 16,32,64,128,256 --paired-rows off,on
b old $O 75c91f4
b exact $N $CN --path exact
b fast-2 $N $CN
b pair-on-off $E $CE --batches 16,32,64,128,256 --paired-rows on,off
b small $N $CN --batches 1,2 --schedule planned,stream,units --trace --leave-out dispatch,finalize
prof() {  # name model batch
  local n=$1 m=$2 bb=$3
  { hdr $CN "ncu --clock-control none --set full --import-source yes -k regex:compute --launch-skip 12 --launch-count 1 -o $n moejit_bench_moe --model $m --batches $bb"
    MOEJIT_CACHE_DIR=/tmp/c-$CN timeout 150 $NCU --clock-control none --set full --import-source yes -k regex:compute \
      --launch-skip 12 --launch-count 1 -o $OUT/s53-$n $N/moejit_bench_moe --model $m --batches $bb
    $NCU -i $OUT/s53-$n.ncu-rep --page source --csv --print-source sass > $OUT/s53-$n-sass.csv
    $NCU -i $OUT/s53-$n.ncu-rep --page details > $OUT/s53-$n-details.txt; } > $OUT/s53-$n.log 2>&1
  echo "$n at ${SECONDS}s: $(wc -l < $OUT/s53-$n-sass.csv) SASS rows"
}
[ "${S53_NO_NCU:-0}" = 1 ] || { prof glm256 glm5.2 256; prof dsv128 dsv4.1-flash 128; }
cd $OUT && tar czf s53-logs.tgz --exclude='*.tgz' --exclude='*.ncu-rep' s53-* && find . -maxdepth 1 -name 's53-*' ! -name '*.tgz' -delete
ls -la
