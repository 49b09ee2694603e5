#!/usr/bin/env bash
# s67 (~560 s, any card): the token frame's correctness: three `moejit run` checks, then the whole GPU matrix
# (tools/gpu_session.sh tests-par, 5 shards: what fits an 80 GB card).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin
export MOEJIT_CACHE_DIR=/tmp/c67
{ for a in "glm5.2 1" "glm5.2 256" "dsv4.1-flash 64 --input-bf16"; do
    set -- $a; m=$1 b=$2; shift 2
    echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: moejit run --model $m --batch $b $*"
    timeout 100 $N/moejit run --model $m --batch $b "$@" 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"
  done; } > $OUT/s67-runs.log 2>&1
grep -E "PASS|FAIL|rc=" $OUT/s67-runs.log
PATH=$N:$PATH DIST=$PWD/.device GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 timeout 520 bash tools/gpu_session.sh tests-par > $OUT/s67-tests.log 2>&1
echo "tests-par rc=$? at ${SECONDS}s"; cat $OUT/summary.txt 2>/dev/null | tail -20
ls $OUT $OUT/logs 2>/dev/null | head -30
