#!/usr/bin/env bash
# s16d (one H200, the session's last ~450 s): 4f31368's lost-rank report on partitions; the spill build's trace
# (DSV4.1-Flash B = 2 on units beside main's, GLM5.2 B = 1 spill); the EP exact-path case if time is left.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S=$PWD/.device/spill; SC=$(paste -sd' ' $S/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
( hdr "$C" moejit_gpu_tests -tc="expert parallelism: a rank whose*"; timeout 60 moejit_gpu_tests --duration=true -tc="expert parallelism: a rank whose*"; echo "rc $?" ) > $OUT/s16d-ep-lost-rank.log 2>&1
echo "lost rank at ${SECONDS}s: $(tail -1 $OUT/s16d-ep-lost-rank.log) $(grep 'test cases:' $OUT/s16d-ep-lost-rank.log)"
{
  hdr "$SC" spill/moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace; timeout 40 $S/moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace
  hdr "$C" moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace; timeout 40 moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units --trace
  hdr "$SC" spill/moejit_bench_moe --model glm5.2 --batches 1 --trace; timeout 40 $S/moejit_bench_moe --model glm5.2 --batches 1 --trace
} > $OUT/s16d-trace.log 2>&1
echo "trace at ${SECONDS}s"; grep -E "^(glm|dsv)|consumers done|GEMM1 share|GEMM2 K128|GEMM2 inputs|first GEMM2" $OUT/s16d-trace.log
if [ $SECONDS -lt 50 ]; then
  ( hdr "$C" moejit_gpu_tests -tc="expert parallelism: the exact path*"; timeout $((120 - SECONDS)) moejit_gpu_tests --duration=true -tc="expert parallelism: the exact path*"; echo "rc $?" ) > $OUT/s16d-ep-exact.log 2>&1
  echo "ep exact at ${SECONDS}s: $(tail -1 $OUT/s16d-ep-exact.log) $(grep 'test cases:' $OUT/s16d-ep-exact.log)"
fi
