#!/usr/bin/env bash
# s75 (~90 s): the packed-weights case on the two seeds that failed in s73/s74 (2727113688: fast B = 64; 33:
# fast B = 16) and six more, on GPU tests whose packed layer now gets the packer's subnormal flag (9c17b29) and
# which check that both layers plan the same token frame; a mismatch prints how the bytes differ. Then the
# zero-block case, whose zero block now holds -0 as well as +0 (4b9dfff).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
T='a layer over weights packed on the host gives the bytes of a layer that packed them itself'
for seed in 33 2727113688 1 2 3 4 5 6; do
  { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/diag/COMMIT)  device: $D  seed: $seed"
    echo "# command: MOEJIT_TEST_SEED=$seed moejit_gpu_tests -tc='$T'"
    MOEJIT_TEST_SEED=$seed MOEJIT_CACHE_DIR=/tmp/c75 timeout 120 .device/diag/moejit_gpu_tests -tc="$T"; } > $OUT/s75-$seed.log 2>&1
  echo "seed=$seed rc=$? at ${SECONDS}s"; grep -h -A1 "ERROR\|MESSAGE: [0-9]\|cosine against" $OUT/s75-$seed.log | grep -v "^--" | head -8
done
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/diag/COMMIT)  device: $D"
  MOEJIT_CACHE_DIR=/tmp/c75 timeout 150 .device/diag/moejit_gpu_tests -tc='pre-quantized x with an all-zero block*'; } > $OUT/s75-zero-block.log 2>&1
echo "zero-block case rc=$? at ${SECONDS}s"
cd $OUT && tar czf s75-logs.tgz s75-*.log
