#!/usr/bin/env bash
# s135 (LIMIT: the call's seconds). Branch unit-smem (.device/us): the unit schedule's first four (unit, token tile)
# entries of a CTA handed from its GEMM1 epilogue to its GEMM2 in SMEM, not through the workspace. On any card:
# its unit-schedule GPU cases (the B = 1-4 matrices on two and three warpgroups, and on 16 SMs, where a CTA runs
# entries of both kinds), then main (.device/mn) against it at B = 1-2 on both shapes, A B A B, then traced B = 1
# of both (us; tg = trace-gemm2's milestones on main). Not an H200: then main against it on 80 SMs of a
# DSV4.1-Flash with I = 1408 (the H200's B = 1 balance), A B A B.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT; echo "device: $D" > $OUT/device.txt
L=${LIMIT:-600}
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$1/COMMIT)  device: $D"; echo "# command: $2"; }
left() { [ $SECONDS -lt $1 ] || { echo "skipped $2 at ${SECONDS}s" | tee -a $OUT/skipped.txt; return 1; }; }
b() { local v=$1 t=$((L-10-SECONDS)); hdr $v "moejit_bench_moe $2 --batches 1,2"
  [ $t -gt 5 ] && MOEJIT_CACHE_DIR=/tmp/c-$v timeout $((t < 60 ? t : 60)) .device/$v/bin/moejit_bench_moe $2 --batches 1,2; }
case $D in *H200*) P="";; *) P="--config .device/scripts/dsv-i1408.json --sm-count 80";; esac
ab() { left $((L-110)) ab-$1 || return 1
  for m in dsv4.1-flash glm5.2; do for v in mn us; do b $v "--model $m" >> $OUT/ab-$v.log 2>&1; done; done
  [ -n "$P" ] && for v in mn us; do b $v "$P" >> $OUT/ab80-$v.log 2>&1; done
  echo "ab round $1 done at ${SECONDS}s"; }
ab 1
T='the unit schedule*'
if left $((L-60)) gpu-us; then t=$((L-10-SECONDS)); [ $t -gt 170 ] && t=170
  { hdr us "moejit_gpu_tests --duration=true -tc='$T'"
    MOEJIT_CACHE_DIR=/tmp/c-us timeout $t .device/us/bin/moejit_gpu_tests --duration=true -tc="$T"; echo "exit $?"; } > $OUT/gpu-us.log 2>&1
  grep -E "test cases|assertions|^exit|ERROR| s: " $OUT/gpu-us.log | tail -8; fi
ab 2
for v in mn us; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
  echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/ab-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done | tee $OUT/ab-summary.txt
[ -n "$P" ] && for v in mn us; do for bb in 1 2; do
  echo "$v dsv-i1408 B=$bb sm80: $(grep -hE "^dsv-i1408 +$bb " $OUT/ab80-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done | tee $OUT/ab80-summary.txt
mkdir -p $OUT/trace-us $OUT/trace-tg
for m in glm5.2 dsv4.1-flash; do for v in us tg; do left $((L-35)) trace-$v-$m || break 2
  { hdr $v "moejit_bench_moe --model $m --batches 1 --trace-csv \$OUT/trace-$v"
    MOEJIT_CACHE_DIR=/tmp/c-$v timeout 30 .device/$v/bin/moejit_bench_moe --model $m --batches 1 --trace-csv $OUT/trace-$v; } >> $OUT/trace-$v.log 2>&1
  done; done
grep -hE "^(glm|dsv)|GEMM1 K-loop|GEMM1 share|GEMM2 inputs in|last weight|consumers done" $OUT/trace-us.log $OUT/trace-tg.log
echo "end at ${SECONDS}s"
