#!/usr/bin/env bash
# s28: every CTA's milestones: DSV4.1-Flash exact B = 2 (cand vs its own median) and fast B = 1, GLM5.2 fast B = 1.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s28-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s28-$n.log)"; }
echo "device: $D"; mkdir -p $OUT/csv-exact $OUT/csv-fast
r 1-exact "$C" 60 moejit_bench_moe --model dsv4.1-flash --path exact --batches 2,4 --trace-csv $OUT/csv-exact
r 2-fast "$C" 60 moejit_bench_moe --model dsv4.1-flash --batches 1,2 --trace-csv $OUT/csv-fast
r 3-glm "$C" 60 moejit_bench_moe --model glm5.2 --batches 1 --trace-csv $OUT/csv-fast
cd $OUT && grep -hE "^(dsv|glm)" s28-*.log; tar czf s28-logs.tgz s28-*.log csv-exact csv-fast && rm -r s28-*.log csv-exact csv-fast
