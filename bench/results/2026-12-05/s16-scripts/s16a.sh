#!/usr/bin/env bash
# s16a (one H200): main's repeated-expert hostile steps; the GEMM2 spill of the unit schedule (.device/spill, main +
# the uncommitted change) checked (moejit run, the unit-schedule GPU cases), traced, and benched against main ABBA
# at B = 1, 2 (planned) and DSV4.1-Flash B = 2 on --schedule units.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S=$PWD/.device/spill; SC=$(paste -sd' ' $S/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/s16a-device.txt
python3 -c "import nvidia.nccl, importlib.metadata as m; print('nccl wheel', m.version('nvidia-nccl-cu13'))" >> $OUT/s16a-device.txt 2>&1
( hdr "$C" moejit_gpu_tests -tc="route ids outside*"; timeout 150 moejit_gpu_tests -tc="route ids outside*"; echo "rc $?" ) > $OUT/s16a-hostile-main.log 2>&1
echo "hostile at ${SECONDS}s: $(tail -1 $OUT/s16a-hostile-main.log) $(grep 'test cases:' $OUT/s16a-hostile-main.log)"
{
for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 2" \
         "--model dsv4.1-flash --batch 2 --schedule units" "--model glm5.2 --batch 1 --shared-expert" \
         "--model dsv4.1-flash --batch 1 --shared-expert" "--model gpt-oss-120b --batch 1"; do
  hdr "$SC" spill/moejit run $a; timeout 60 $S/moejit run $a 2>&1 | tail -4; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s16a-spill-run.log 2>&1
echo "spill run at ${SECONDS}s: $(grep -c PASS $OUT/s16a-spill-run.log) PASS $(grep -c FAIL $OUT/s16a-spill-run.log) FAIL, rc: $(grep '^rc' $OUT/s16a-spill-run.log | sort | uniq -c | tr '\n' ' ')"
grep -q FAIL $OUT/s16a-spill-run.log && exit 1
( hdr "$SC" spill/moejit_gpu_tests -tc="the unit schedule*"; timeout 200 $S/moejit_gpu_tests -tc="the unit schedule*"; echo "rc $?" ) > $OUT/s16a-spill-gpu.log 2>&1
echo "spill gpu at ${SECONDS}s: $(tail -1 $OUT/s16a-spill-gpu.log) $(grep 'test cases:' $OUT/s16a-spill-gpu.log)"
mkdir -p $OUT/tr
{ hdr "$SC" spill/moejit_bench_moe --model dsv4.1-flash --batches 1,2 --schedule units --trace-csv tr; timeout 60 $S/moejit_bench_moe --model dsv4.1-flash --batches 1,2 --schedule units --trace-csv $OUT/tr; } > $OUT/s16a-spill-trace.log 2>&1
(cd $OUT && tar czf s16a-spill-trace-csv.tgz tr && rm -rf tr)
echo "trace at ${SECONDS}s"
for m in glm5.2 dsv4.1-flash; do
  for b in main spill spill main; do
    bin=moejit_bench_moe; cm=$C; [ $b = spill ] && bin=$S/moejit_bench_moe cm=$SC
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2; timeout 60 $bin --model $m --batches 1,2; } >> $OUT/s16a-abba.log 2>&1
  done
  [ $SECONDS -gt 480 ] && break
done
for b in main spill spill main; do
  [ $SECONDS -gt 540 ] && break
  bin=moejit_bench_moe; cm=$C; [ $b = spill ] && bin=$S/moejit_bench_moe cm=$SC
  { hdr "$cm" "$b:" moejit_bench_moe --model dsv4.1-flash --batches 2 --schedule units; timeout 30 $bin --model dsv4.1-flash --batches 2 --schedule units; } >> $OUT/s16a-abba-units.log 2>&1
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s16a-abba.log $OUT/s16a-abba-units.log
