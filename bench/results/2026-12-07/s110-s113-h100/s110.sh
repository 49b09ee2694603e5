#!/usr/bin/env bash
# s110 (~250 s): acceptance 1 and 2 on main's kernels (099d492, .device/sm; old/ = 75c91f4's bench), then
# compute-sanitizer memcheck and racecheck on the unit schedule's kernels that 363ee1e/54b04c6 changed
# (B = 1 on three warpgroups, B = 2 on two) and one stream kernel, each `moejit run` checked against the CPU.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
DIST=.device/sm OUT=$OUT/acc DEVICE="$D" timeout -k 5 330 tools/gpu_session.sh acceptance
cp $OUT/acc/summary.txt $OUT/acc-summary.txt 2>/dev/null
for t in memcheck racecheck; do for mb in "dsv4.1-flash 1" "glm5.2 1" "glm5.2 2" "dsv4.1-flash 2"; do set -- $mb
  { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/sm/COMMIT)  device: $D"
    echo "# command: compute-sanitizer --tool $t --error-exitcode 1 moejit run --model $1 --batch $2 --seed 1"
    MOEJIT_CACHE_DIR=/tmp/c-sm timeout -k 5 60 compute-sanitizer --tool $t --error-exitcode 1 .device/sm/bin/moejit run --model $1 --batch $2 --seed 1
    echo "exit $?"; } >> $OUT/sanitizer.log 2>&1
  echo "$t $1 B=$2: $(grep -hE 'result:|SUMMARY|^exit' $OUT/sanitizer.log | tail -3 | tr '\n' ' ')" | tee -a $OUT/sanitizer-summary.txt
done; done
