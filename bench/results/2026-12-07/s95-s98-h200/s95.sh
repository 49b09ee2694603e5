#!/usr/bin/env bash
# s95: on an H200, acceptance 1 and 2 (tools/gpu_session.sh acceptance, .device/sy = main's kernels, old =
# 75c91f4's bench). On an H100: the large-B points on 80 SMs (each SM asked for the bytes a clock the H200 asks
# of its 132), both shapes, twice: a proxy of the H200's consumer-bound points, not its numbers.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
case $D in
  *H200*) DIST=.device/sy tools/gpu_session.sh acceptance ;;
  *) mkdir -p $OUT/logs; C=$(cat .device/sy/COMMIT)
     for i in 1 2; do for m in glm5.2 dsv4.1-flash; do
       { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
         echo "# command: moejit_bench_moe --model $m --sm-count 80 --batches 16,32,64,128,256"
         MOEJIT_CACHE_DIR=/tmp/c timeout 150 .device/sy/bin/moejit_bench_moe --model $m --sm-count 80 --batches 16,32,64,128,256
       } >> $OUT/logs/s95-sm80-$i.log 2>&1; done; done
     grep -hE "^(glm|dsv)" $OUT/logs/s95-sm80-*.log | awk '{print $1,$2,$6}' ;;
esac
