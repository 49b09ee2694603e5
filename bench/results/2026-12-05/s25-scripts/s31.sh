#!/usr/bin/env bash
# s31 (<= ~200 s): planner-level variants against 75c91f4 (.device/old) in one lease, base = .device/bin (main's
# kernels). The exact path at B = 1-8 (acceptance 2's DSV4.1-Flash B = 2 gap): the planned tile_n 16 against
# tile_n 8 (half the mma.sync a K16, 10 stages), PDL on; the fast path's DSV4.1-Flash B = 1-2 (under 75% on the
# H100): stages 6 and 10 against the planned 8.
set -uo pipefail
export MOEJIT_CACHE_DIR=/tmp/moejit-cache
B=$PWD/.device/bin O=$PWD/.device/old/moejit_bench_moe
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); CB=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; [ $SECONDS -gt ${S31_DEADLINE:-200} ] && { echo "$n skipped at ${SECONDS}s"; return; }
  { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s31-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s31-$n.log)"; }
echo "device: $D"
X="--path exact --model dsv4.1-flash --batches 1,2,4,8"
r 01-old 75c91f4 60 $O
r 02-exact "$CB" 40 $B/moejit_bench_moe $X
r 03-exact-t8 "$CB" 40 $B/moejit_bench_moe $X --tile-n 8
r 04-exact-pdl "$CB" 40 $B/moejit_bench_moe $X --pdl
r 05-exact-t8-pdl "$CB" 40 $B/moejit_bench_moe $X --tile-n 8 --pdl
r 06-exact-glm "$CB" 40 $B/moejit_bench_moe --path exact --model glm5.2 --batches 1,2,4,8
r 07-exact-glm-t8 "$CB" 40 $B/moejit_bench_moe --path exact --model glm5.2 --batches 1,2,4,8 --tile-n 8
r 08-fast "$CB" 40 $B/moejit_bench_moe --model dsv4.1-flash --batches 1,2
r 09-fast-s6 "$CB" 40 $B/moejit_bench_moe --model dsv4.1-flash --batches 1,2 --stages 6
r 10-fast-s10 "$CB" 40 $B/moejit_bench_moe --model dsv4.1-flash --batches 1,2 --stages 10
r 11-exact-t8 "$CB" 40 $B/moejit_bench_moe $X --tile-n 8
r 12-exact "$CB" 40 $B/moejit_bench_moe $X
r 13-old 75c91f4 60 $O
cd $OUT && for f in s31-*.log; do echo "== $f"; grep -E '^(glm5.2|dsv4.1-flash) ' $f | awk '{print $1, $2, $6}' | paste -sd' '; done
tar czf s31-logs.tgz s31-*.log && rm s31-*.log
