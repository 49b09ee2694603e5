#!/usr/bin/env bash
# s11c: paired rows at B = 2-4 + one release per epilogue (no fence.sc in every thread): ABBA against 3756dc2's
# bench over both full sweeps, then the whole GPU matrix (tests-par, 5 shards, no SM partitions).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
mkdir -p $OUT/bench
[ "${MATRIX:-0}" = 1 ] || { for v in old new new old; do for m in glm5.2 dsv4.1-flash; do
    bin=moejit_bench_moe; [ $v = old ] && bin=$PWD/.device/old/moejit_bench_moe
    echo "#### $v: moejit_bench_moe --model $m"; hdr moejit_bench_moe --model $m; $bin --model $m
  done; done; } > $OUT/bench/s11c-ab.log 2>&1
echo "A/B at ${SECONDS}s"
awk '/^####/{v=$2} /^(glm5.2|dsv4.1-flash) +[0-9]+ /{print v, $1, "B="$2, $6, $10}' $OUT/bench/s11c-ab.log | sort -k2,2 -k3,3V -k1,1 | paste -sd' ' | fold -w 300
[ "${MATRIX:-0}" = 1 ] && { GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 DIST=$PWD/.device timeout $((590 - SECONDS)) tools/gpu_session.sh tests-par; echo "tests-par rc=$? at ${SECONDS}s"; }
