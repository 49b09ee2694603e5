#!/usr/bin/env bash
# s57: the whole GPU matrix on main's new defaults (.device/bin = c8476f7: GEMM1's short segments paired up to
# B = 64), 8 shards; on an H200 first S53_NO_NCU=1 s53 (acceptance 1 and 2, ~180 s) and the matrix without the
# partition cases; on another card the matrix whole, then the default on 80 SMs beside its --paired-rows off.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
h200=0; case $D in *H200*) h200=1 ;; esac
[ $h200 = 1 ] && S53_NO_NCU=1 bash .device/scripts/s53.sh
mkdir -p $OUT/tests
OUT=$OUT/tests DIST=$PWD/.device GPU_TEST_SHARDS=8 GPU_TEST_PARTITIONS=$((1 - h200)) timeout 420 \
  bash .device/scripts/gpu_session.sh tests-par
cat $OUT/tests/summary.txt
if [ $h200 = 0 ]; then
  C=$(cat .device/COMMIT)
  { for m in glm5.2 dsv4.1-flash; do echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
      echo "# command: moejit_bench_moe --model $m --batches 16,32,64,128,256 --sm-count 80 --paired-rows planned,off"
      MOEJIT_CACHE_DIR=/tmp/c-b timeout 150 .device/bin/moejit_bench_moe --model $m --batches 16,32,64,128,256 \
        --sm-count 80 --paired-rows planned,off; done; } > $OUT/s57-sm80.log 2>&1
  grep -E "^(glm|dsv)" $OUT/s57-sm80.log
fi
ls -laR $OUT | head -20
