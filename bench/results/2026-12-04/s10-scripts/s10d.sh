#!/usr/bin/env bash
# s10d: the whole GPU matrix but the SM-partition cases (5 shards), beside memcheck of B = 1's step owners.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
mkdir -p $OUT/logs
( for m in glm5.2 dsv4.1-flash; do
    { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
      echo "# command: compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch 1"
      compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch 1; echo "rc=$?"; } > $OUT/logs/memcheck-owners-$m.log 2>&1
  done ) &
GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 DIST=$PWD/.device timeout 560 tools/gpu_session.sh tests-par
wait
grep -h "rc=\|ERROR SUMMARY\|PASS\|FAIL" $OUT/logs/memcheck-owners-*.log | head
echo "layer checks: $(cat $OUT/logs/gpu-tests-shard*.log | grep 'cos_q=' | grep -vc MESSAGE) at ${SECONDS}s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
