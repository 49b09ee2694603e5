#!/usr/bin/env bash
# s123 (LIMIT: the call's seconds, 600 unless set): H200 -> acceptance 1-2 on main's kernels (.device/mn = 4156253)
# first. Any card: moejit run checks of branch unit-pieces (.device/up: the units' GEMM1 steps dealt over all CTAs,
# on finalize-cols on gemm2-deal); main / gemm2-deal / finalize-cols / unit-pieces at B = 1-4 (A B C D, twice
# while time allows); the unit schedule's GPU cases on up. Each part starts only while the call's time allows.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
L=${LIMIT:-600}
left() { [ $SECONDS -lt $1 ] || { echo "skipped $2 at ${SECONDS}s" | tee -a $OUT/skipped.txt; return 1; }; }
case $D in *H200*)
  DEVICE="$D" DIST=.device/mn OUT=$OUT/acc tools/gpu_session.sh acceptance > $OUT/acc.log 2>&1; echo "acceptance exit $? at ${SECONDS}s"
  cat $OUT/acc/summary.txt 2>/dev/null ;;
esac
for mb in "glm5.2 1" "dsv4.1-flash 1" "glm5.2 2" "dsv4.1-flash 2 --schedule units" "glm5.2 4 --schedule units"; do set -- $mb
  MOEJIT_CACHE_DIR=/tmp/c-up timeout 40 .device/up/bin/moejit run --model $1 --batch $2 "${@:3}" >> $OUT/run-up.log 2>&1; echo "up run $* exit $?"; done
echo "runs done at ${SECONDS}s"
b() { local v=$1 m=$2; shift 2; echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$v/COMMIT)  device: $D"
  echo "# command: moejit_bench_moe --model $m --batches 1,2 $*"
  MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 .device/$v/bin/moejit_bench_moe --model $m --batches 1,2 "$@"; }
for r in 1 2; do left $((L-200-100*(r-1))) ab-$r || break
  for m in dsv4.1-flash glm5.2; do for v in mn gd fc up; do b $v $m >> $OUT/ab-$v.log 2>&1; done; done
  echo "ab round $r done at ${SECONDS}s"; done
for v in mn gd fc up; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
  echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/ab-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done | tee $OUT/ab-summary.txt
if left $((L-90)) gpu-cases; then
{ echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/up/COMMIT)  device: $D"
  echo "# command: moejit_gpu_tests --duration=true -tc='a traced forward*,route ids outside*,the warp*,the unit schedule at B = 1-4 on two*'"
  MOEJIT_CACHE_DIR=/tmp/c-up timeout $((L-12-SECONDS)) .device/up/bin/moejit_gpu_tests --duration=true -tc="a traced forward*,route ids outside*,the warp*,the unit schedule at B = 1-4 on two*"; echo "exit $?"; } > $OUT/gpu-up.log 2>&1
grep -E "test cases|assertions|^exit|ERROR|seconds" $OUT/gpu-up.log | tail -12; fi
echo "end at ${SECONDS}s"
