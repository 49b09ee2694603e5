#!/usr/bin/env bash
# s27: where DSV4.1-Flash's fast B = 1, 2 time goes: trace, roles left out, schedule and PDL sweeps.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; [ $SECONDS -gt 200 ] && return; { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s27-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s27-$n.log)"; }
echo "device: $D"
r 1-trace "$C" 60 moejit_bench_moe --model dsv4.1-flash --batches 1,2 --trace
r 2-leave "$C" 60 moejit_bench_moe --model dsv4.1-flash --batches 1,2 --leave-out dispatch,finalize
r 3-sched "$C" 90 moejit_bench_moe --model dsv4.1-flash --batches 1,2,4 --schedule stream,units --pdl
r 4-nopdl "$C" 60 moejit_bench_moe --model dsv4.1-flash --batches 1,2,4 --schedule stream,units --no-pdl
r 5-glm "$C" 90 moejit_bench_moe --model glm5.2 --batches 1,2 --trace --leave-out dispatch,finalize
cd $OUT && grep -hE "^(dsv|glm|  |    )" s27-*.log | head -150; tar czf s27-logs.tgz s27-*.log && rm s27-*.log
