#!/usr/bin/env bash
# s12a: main (ba7ab8a) baseline: the full default sweep of both models twice, then variants at small and large B
# (schedule units vs stream at B = 2-4, ring depths, consumer warpgroups at B >= 64), and a trace of GLM5.2 B = 256.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
b() { echo "#### $*"; hdr moejit_bench_moe "$@"; moejit_bench_moe "$@"; }
mkdir -p $OUT
for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m > $OUT/s12a-bench-$m-$r.log 2>&1; done; done
echo "sweeps at ${SECONDS}s"
for f in $OUT/s12a-bench-*.log; do awk -v f=$(basename $f) '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{printf "%s B=%s %s %s\n", f, $2, $6, $10}' $f; done | paste -sd' ' | fold -w 250
{ for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 2,3,4 --schedule stream,units; done; done; } > $OUT/s12a-units.log 2>&1
echo "units at ${SECONDS}s"
{ for s in 4 6 8; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 2,4,8 --stages $s; done; done; } > $OUT/s12a-stages-small.log 2>&1
echo "stages small at ${SECONDS}s"
{ for s in 5 6 8; do for m in glm5.2; do b --model $m --batches 64,128,256 --stages $s; done; done
  b --model glm5.2 --batches 64,128,256 --consumer-groups 2
  b --model glm5.2 --batches 64,128,256
  b --model glm5.2 --batches 256 --trace; } > $OUT/s12a-large.log 2>&1
echo "large at ${SECONDS}s"
for f in units stages-small large; do awk '/^####/{v=$0} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v" | B="$2, $6, $10, $NF, $(NF-1), $(NF-2), $(NF-3)}' $OUT/s12a-$f.log; done
