#!/usr/bin/env bash
# s12b: the small-batch ring depth on main (ba7ab8a): 3, 4, 5 stages at B = 2-8 (three rounds, interleaved), and
# B = 1-2 on both schedules at 4, 6, 8 stages.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
b() { echo "#### $*"; hdr moejit_bench_moe "$@"; moejit_bench_moe "$@"; }
mkdir -p $OUT
{ for r in 1 2 3; do for s in 3 4 5; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 2,3,4,5,6,8 --stages $s; done; done; done; } > $OUT/s12b-stages.log 2>&1
echo "stages at ${SECONDS}s"
{ for s in 4 6 8; do for m in glm5.2 dsv4.1-flash; do b --model $m --batches 1,2 --schedule stream,units --stages $s; done; done; } > $OUT/s12b-b12.log 2>&1
echo "b12 at ${SECONDS}s"
for f in stages b12; do awk '/^#### /{v=$0} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{n=split(v,a," "); s=""; for(i=2;i<=n;i++) if(a[i]=="--stages") s=a[i+1]; print $1, "B="$2, $NF=="pdl"||$NF=="-" ? $(NF-1) : $NF, "s="s, $6}' $OUT/s12b-$f.log | sort | awk '{k=$1" "$2" "$3" "$4; v[k]=v[k]" "$5} END{for(k in v) print k":"v[k]}' | sort -k1,1 -k2,2V -k3,3 -k4,4; done
