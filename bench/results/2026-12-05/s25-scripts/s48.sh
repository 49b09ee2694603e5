#!/usr/bin/env bash
# s48 (~200 s): where today's exact kernel waits at DSV4.1-Flash B = 2 (bench/results/2026-12-06-h100-item-cases-
# and-exact-ncu.md: 1.1% fewer instructions than 75c91f4's, 8.1% longer, the top stall moved to the L1TEX
# scoreboard). ncu --set full with the source view for 75c91f4's kernel, today's stream (as planned) and items:
# a report each, and each report's SASS page as CSV (the warp stall samples per instruction). Then the exact path
# against 75c91f4 at DSV4.1-Flash B = 1-4, once each (acceptance 2, on an H200 only).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
B=$PWD/.device/bin; O=$PWD/.device/old; C=$(cat .device/COMMIT)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
prof() {  # name bin commit args...
  local n=$1 bin=$2 c=$3; shift 3
  { echo "# date: $(date -u +%FT%TZ)  commit: $c  device: $D"
    echo "# command: ncu --clock-control none --set full --import-source yes -k regex:compute --launch-skip 12 --launch-count 1 -o $n moejit_bench_moe $* --model dsv4.1-flash --batches 2"
    MOEJIT_CACHE_DIR=/tmp/c-$n timeout 120 $NCU --clock-control none --set full --import-source yes -k regex:compute \
      --launch-skip 12 --launch-count 1 -o $OUT/s48-$n $bin/moejit_bench_moe "$@" --model dsv4.1-flash --batches 2
    $NCU -i $OUT/s48-$n.ncu-rep --page source --csv --print-source sass > $OUT/s48-$n-sass.csv
    $NCU -i $OUT/s48-$n.ncu-rep --page details > $OUT/s48-$n-details.txt; } > $OUT/s48-$n.log 2>&1
  echo "$n at ${SECONDS}s: $(wc -l < $OUT/s48-$n-sass.csv) SASS rows"
}
prof old $O 75c91f4
prof stream $B $C --path exact
prof items $B $C --path exact --schedule items
case $D in *H200*)
  for v in old main; do
    bin=$O; args=""; c=75c91f4; [ $v = main ] && bin=$B && args="--path exact" && c=$C
    { echo "# date: $(date -u +%FT%TZ)  commit: $c  device: $D"; echo "# command: moejit_bench_moe $args --model dsv4.1-flash --batches 1,2,4"
      MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 $bin/moejit_bench_moe $args --model dsv4.1-flash --batches 1,2,4; } > $OUT/s48-bench-$v.log 2>&1
    grep -E "^dsv4.1-flash " $OUT/s48-bench-$v.log
  done ;;
esac
cd $OUT && tar czf s48-logs.tgz --exclude='*.tgz' --exclude='*.ncu-rep' s48-* && find . -maxdepth 1 -name 's48-*' ! -name '*.tgz' -delete
