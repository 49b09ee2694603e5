#!/usr/bin/env bash
# s26: the partitions case the tests-par lease cut off; DSV4.1-Flash exact B = 1, 2, 4: 75c91f4 vs cand, CTA sweep, trace.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT); O=$PWD/.device/old/moejit_bench_moe
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; [ $SECONDS -gt 330 ] && return; { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s26-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s26-$n.log)"; }
echo "device: $D"
r 0-part "$C" 90 moejit_gpu_tests --duration=true -tc="two layers planned for 64-SM partitions*"
r 1-old 75c91f4 60 $O --model dsv4.1-flash --batches 1,2,4
r 2-exact "$C" 60 moejit_bench_moe --model dsv4.1-flash --path exact --batches 1,2,4
r 3-ctas "$C" 90 moejit_bench_moe --model dsv4.1-flash --path exact --batches 1,2,4 --ctas-per-sm 1,2,3 --activation-warps 1,2
r 4-trace "$C" 60 moejit_bench_moe --model dsv4.1-flash --path exact --batches 2 --trace
r 5-old 75c91f4 60 $O --model dsv4.1-flash --batches 1,2,4
r 6-exact "$C" 60 moejit_bench_moe --model dsv4.1-flash --path exact --batches 1,2,4
r 7-stages "$C" 90 moejit_bench_moe --model dsv4.1-flash --path exact --batches 2,4 --ctas-per-sm 2 --stages 12
cd $OUT && grep -hE "^(dsv|  )" s26-[1-7]*.log | head -60; tar czf s26-logs.tgz s26-*.log && rm s26-*.log
