#!/usr/bin/env bash
# s127 (~270 s): an H200 -> acceptance 1 and 2 on main's kernels (.device/mn = 4156253); any other card ->
# compute-sanitizer memcheck and racecheck on main's warp-table kernels (B = 1-2, both shapes), while time allows.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
case $D in *H200*)
  DEVICE="$D" DIST=.device/mn OUT=$OUT/acc timeout -k 5 255 tools/gpu_session.sh acceptance > $OUT/acc.log 2>&1
  echo "acceptance exit $? at ${SECONDS}s"; cat $OUT/acc/summary.txt 2>/dev/null ;;
*)
  for t in memcheck racecheck; do for mb in "dsv4.1-flash 1" "glm5.2 1" "glm5.2 2" "dsv4.1-flash 2"; do set -- $mb
    [ $SECONDS -lt 200 ] || { echo "skipped $t $* at ${SECONDS}s" | tee -a $OUT/sanitizer-summary.txt; continue; }
    { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/mn/COMMIT)  device: $D"
      echo "# command: compute-sanitizer --tool $t --error-exitcode 1 moejit run --model $1 --batch $2 --seed 1"
      MOEJIT_CACHE_DIR=/tmp/c-mn timeout -k 5 $((255-SECONDS)) compute-sanitizer --tool $t --error-exitcode 1 .device/mn/bin/moejit run --model $1 --batch $2 --seed 1
      echo "exit $?"; } >> $OUT/sanitizer.log 2>&1
    echo "$t $1 B=$2: $(grep -hE 'result:|SUMMARY|^exit' $OUT/sanitizer.log | tail -3 | tr '\n' ' ') at ${SECONDS}s" | tee -a $OUT/sanitizer-summary.txt
  done; done ;;
esac
