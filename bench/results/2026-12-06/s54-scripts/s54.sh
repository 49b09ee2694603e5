#!/usr/bin/env bash
# s54: the GPU case of --paired-rows on (GEMM1's short segments paired in 16-column token tiles, every routing,
# both shapes, the shared expert, gpt-oss's block with biases and padding) on any card; on an H200, s53 first.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
case $D in *H200*) bash .device/scripts/s53.sh ;; esac
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/exp/COMMIT)  device: $D"
  echo "# command: moejit_gpu_tests -tc=\"GEMM1's short segments paired*\""
  MOEJIT_CACHE_DIR=/tmp/c-gt timeout 400 .device/exp/moejit_gpu_tests -tc="GEMM1's short segments paired*"; echo "exit $?"
} > $OUT/s54-gpu-test.log 2>&1
grep -E "FAIL|test cases|assertions|exit" $OUT/s54-gpu-test.log | tail -5
ls -la $OUT
