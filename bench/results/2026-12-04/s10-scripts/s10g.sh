#!/usr/bin/env bash
# s10g: the stream schedule's step weight of a short item: (tiles + f) with f = 3 (main), 6 and 10, ABBA-like.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D" > $OUT/s10g-ab.log
for v in f3 f6 f10 f10 f6 f3; do for m in glm5.2 dsv4.1-flash; do
  bin=$PWD/.device/bin/moejit_bench_moe; [ $v != f3 ] && bin=$PWD/.device/$v/moejit_bench_moe
  echo "#### $v: moejit_bench_moe --model $m --batches 2,4,8,16,32"; $bin --model $m --batches 2,4,8,16,32
done; done >> $OUT/s10g-ab.log 2>&1
echo "done at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6}' $OUT/s10g-ab.log | sort -k2,2 -k3,3V -k1,1 | paste -sd' ' | fold -w 300
