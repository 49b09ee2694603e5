#!/usr/bin/env bash
# s133 (LIMIT: the call's seconds). An H200 -> acceptance 1 and 2 on main (.device/mn = 319de89: 4156253's kernels), then
# unit-pieces (.device/up = 0d6fec8) against main at B = 1-2, A B A B, then up's unit-schedule GPU cases.
# Any other card -> compute-sanitizer memcheck and racecheck on main's kernels (319de89) where s128 did not reach: B = 3, 4, 8
# on the fast path, B = 1-2 on the exact path, a shared expert with BF16 input. Each part starts only while the call's time allows.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
L=${LIMIT:-600}
left() { [ $SECONDS -lt $1 ] || { echo "skipped $2 at ${SECONDS}s" | tee -a $OUT/skipped.txt; return 1; }; }
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$1/COMMIT)  device: $D"; echo "# command: $2"; }
case $D in *H200*)
  DEVICE="$D" DIST=.device/mn OUT=$OUT/acc timeout -k 5 $(( L-10 < 260 ? L-10 : 260 )) tools/gpu_session.sh acceptance > $OUT/acc.log 2>&1
  echo "acceptance exit $? at ${SECONDS}s"; cat $OUT/acc/summary.txt 2>/dev/null
  b() { local v=$1 m=$2; hdr $v "moejit_bench_moe --model $m --batches 1,2"
    MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 .device/$v/bin/moejit_bench_moe --model $m --batches 1,2; }
  for r in 1 2; do left $((L-150-60*(r-1))) ab-$r || break
    for m in dsv4.1-flash glm5.2; do for v in mn up; do b $v $m >> $OUT/ab-$v.log 2>&1; done; done
    echo "ab round $r done at ${SECONDS}s"; done
  for v in mn up; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
    echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/ab-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done | tee $OUT/ab-summary.txt
  if left $((L-60)) gpu-cases; then
    { hdr up "moejit_gpu_tests --duration=true -tc='a traced forward*,the unit schedule at B = 1-4 on two*'"
      MOEJIT_CACHE_DIR=/tmp/c-up timeout $((L-12-SECONDS)) .device/up/bin/moejit_gpu_tests --duration=true -tc="a traced forward*,the unit schedule at B = 1-4 on two*"; echo "exit $?"; } > $OUT/gpu-up.log 2>&1
    grep -E "test cases|assertions|^exit|ERROR" $OUT/gpu-up.log | tail -8; fi ;;
*)
  for t in memcheck racecheck; do for mb in "dsv4.1-flash 3 fast" "glm5.2 4 fast" "glm5.2 1 exact" "dsv4.1-flash 2 exact" "glm5.2 1 fast --shared-expert --input-bf16" "dsv4.1-flash 8 fast"; do set -- $mb
    left $((L-40)) "$t $*" || continue; m=$1 bb=$2 p=$3; shift 3
    { hdr mn "compute-sanitizer --tool $t --error-exitcode 1 moejit run --model $m --batch $bb --path $p $* --seed 1"
      MOEJIT_CACHE_DIR=/tmp/c-mn timeout -k 5 $((L-10-SECONDS)) compute-sanitizer --tool $t --error-exitcode 1 .device/mn/bin/moejit run --model $m --batch $bb --path $p "$@" --seed 1
      echo "exit $?"; } >> $OUT/sanitizer.log 2>&1
    echo "$t $m B=$bb $p $*: $(grep -hE 'result:|SUMMARY|^exit' $OUT/sanitizer.log | tail -3 | tr '\n' ' ') at ${SECONDS}s" | tee -a $OUT/sanitizer-summary.txt
  done; done ;;
esac
echo "end at ${SECONDS}s"
