#!/usr/bin/env bash
# s113: on an H200 (the acceptance's card), acceptance 1 and 2 on main's kernels (099d492, .device/sm), then
# the B = 1-2 traces of both shapes (where the short points' time goes); on any card, the 4 expert-parallelism
# GPU cases (the matrix's rest: s111-s112 ran the other 40 on this commit).
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
case $D in *H200*)
  DIST=.device/sm OUT=$OUT/acc timeout -k 5 300 tools/gpu_session.sh acceptance; cp $OUT/acc/summary.txt $OUT/acc-summary.txt
  for m in dsv4.1-flash glm5.2; do { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/sm/COMMIT)  device: $D"
    echo "# command: moejit_bench_moe --model $m --batches 1,2 --trace"
    MOEJIT_CACHE_DIR=/tmp/c-sm timeout -k 5 60 .device/sm/bin/moejit_bench_moe --model $m --batches 1,2 --trace; } >> $OUT/trace.log 2>&1; done ;;
esac
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/sm/COMMIT)  device: $D"
  echo "# command: moejit_gpu_tests --duration=true -tc='expert parallelism*'"
  MOEJIT_CACHE_DIR=/tmp/c-sm timeout -k 5 200 .device/sm/bin/moejit_gpu_tests --duration=true -tc='expert parallelism*'; echo "exit $?"; } > $OUT/ep.log 2>&1
tail -4 $OUT/ep.log
