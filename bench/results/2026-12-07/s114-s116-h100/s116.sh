#!/usr/bin/env bash
# s116 (~400 s): branch warp-tables (d69cab1, .device/wt): at B = 1-4 of both shapes its default (the warp's tables)
# against --warp-tables off (the block's) in one process, two runs; then the
# whole GPU matrix on the branch's kernels (5 shards, the solo case; partitions and EP cases after, if time).
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
b() { local v=$1 m=$2; shift 2; echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$v/COMMIT)  device: $D"
  echo "# command: moejit_bench_moe --model $m --batches 1,2,3,4 $*"
  MOEJIT_CACHE_DIR=/tmp/c-$v timeout 90 .device/$v/bin/moejit_bench_moe --model $m --batches 1,2,3,4 "$@"; }
for r in 1 2; do for m in glm5.2 dsv4.1-flash; do
  b wt $m --warp-tables planned,off >> $OUT/ab-wt.log 2>&1
done; done
for m in glm5.2 dsv4.1-flash; do for bb in 1 2 3 4; do
  echo "$m B=$bb warp: $(grep -hE "^$m +$bb .* warp$" $OUT/ab-wt.log | awk '{print $6}' | tr '\n' ' ') block: $(grep -hE "^$m +$bb .* block$" $OUT/ab-wt.log | awk '{print $6}' | tr '\n' ' ')"
done; done | tee $OUT/ab-summary.txt
DIST=.device/wt GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 OUT=$OUT/m timeout -k 5 330 tools/gpu_session.sh tests-par > /dev/null 2>&1
cat $OUT/m/summary.txt | cut -c1-60
DIST=.device/wt OUT=$OUT/p timeout -k 5 60 tools/gpu_session.sh partitions > /dev/null 2>&1; cut -c1-60 $OUT/p/summary.txt
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/wt/COMMIT)  device: $D"; echo "# command: moejit_gpu_tests --duration=true -tc='expert parallelism*'"
  MOEJIT_CACHE_DIR=/tmp/c-wt timeout -k 5 120 .device/wt/bin/moejit_gpu_tests --duration=true -tc='expert parallelism*'; echo "exit $?"; } > $OUT/ep.log 2>&1; tail -3 $OUT/ep.log
