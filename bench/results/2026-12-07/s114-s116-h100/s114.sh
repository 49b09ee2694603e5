#!/usr/bin/env bash
# s114 (~250 s): branch warp-tables (f90990a, .device/wt) against main (099d492, .device/sm) at B = 1-4, both
# shapes: main / branch / branch --warp-tables off / main / branch (A B C A B); the new GPU cases (the warp's
# tables against the block's, traced; the hostile routes on every schedule and builder); moejit run checks.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
b() { local v=$1 m=$2; shift 2; echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$v/COMMIT)  device: $D"
  echo "# command: moejit_bench_moe --model $m --batches 1,2,3,4 $*"
  MOEJIT_CACHE_DIR=/tmp/c-$v timeout 90 .device/$v/bin/moejit_bench_moe --model $m --batches 1,2,3,4 "$@"; }
for r in 1 2; do for m in glm5.2 dsv4.1-flash; do
  b sm $m >> $OUT/ab-sm.log 2>&1; b wt $m >> $OUT/ab-wt.log 2>&1; b wt $m --warp-tables off >> $OUT/ab-wtoff.log 2>&1
done; done
for v in sm wt wtoff; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2 3 4; do
  echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/ab-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done | tee $OUT/ab-summary.txt
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/wt/COMMIT)  device: $D"
  echo "# command: moejit_gpu_tests --duration=true -tc='the warp*,route ids outside*,a traced forward*'"
  MOEJIT_CACHE_DIR=/tmp/c-wt timeout 200 .device/wt/bin/moejit_gpu_tests --duration=true -tc="the warp*,route ids outside*,a traced forward*"; echo "exit $?"; } > $OUT/gpu.log 2>&1
grep -E "test cases|assertions|^exit" $OUT/gpu.log
for mb in "glm5.2 4" "dsv4.1-flash 2" "dsv4.1-flash 3" "glm5.2 1"; do set -- $mb
  MOEJIT_CACHE_DIR=/tmp/c-wt timeout 60 .device/wt/bin/moejit run --model $1 --batch $2 >> $OUT/run.log 2>&1; echo "run $1 B=$2 exit $?"; done
grep -cE "PASS" $OUT/run.log; grep -E "FAIL" $OUT/run.log | head -3
