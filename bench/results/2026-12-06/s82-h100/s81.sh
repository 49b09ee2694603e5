#!/usr/bin/env bash
# s81 (~150 s, any card): acceptance 5's racecheck, first rerun since 2026-12-01 (bench/results/2026-12-01-h200-
# fast-path.md: the stage hazards are racecheck's, shown by bench/racecheck/mbarrier_handoff.cu; 28 hazards on
# the tail's broadcast word were not explained; the producer warps reconverge with __syncwarp before the tail's
# __syncthreads since 91cc779). Then the repro's five modes, and the B = 1 prologue under ncu (stall reasons by
# SASS line: "no instruction" on the weight producer's first lines would mean cold instruction fetch).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT); N=$PWD/.device/bin
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
export MOEJIT_CACHE_DIR=/tmp/c81
for p in fast exact; do
  { hdr compute-sanitizer --tool racecheck moejit run --model glm5.2 --batch 8 --path $p --seed 1
    timeout 200 compute-sanitizer --tool racecheck $N/moejit run --model glm5.2 --batch 8 --path $p --seed 1; echo "rc=$?"; } > $OUT/s81-racecheck-$p.log 2>&1
  echo "racecheck $p: $(grep -E "RACECHECK SUMMARY|ERROR SUMMARY|rc=" $OUT/s81-racecheck-$p.log | tr '\n' ' ') at ${SECONDS}s"
done
{ hdr compute-sanitizer --tool racecheck mbarrier_handoff; timeout 60 compute-sanitizer --tool racecheck .device/racecheck/mbarrier_handoff; echo "rc=$?"; } > $OUT/s81-racecheck-repro.log 2>&1
echo "repro: $(grep -E "SUMMARY|rc=" $OUT/s81-racecheck-repro.log | tr '\n' ' ')"
{ hdr ncu --clock-control none --set full --import-source yes -k regex:compute --launch-skip 12 --launch-count 1 moejit_bench_moe --model dsv4.1-flash --batches 1
  timeout 200 $NCU --clock-control none --set full --import-source yes -k regex:compute --launch-skip 12 --launch-count 1 -o $OUT/s81-b1 $N/moejit_bench_moe --model dsv4.1-flash --batches 1; echo "rc=$?"
  $NCU --import $OUT/s81-b1.ncu-rep --page source --csv --print-source sass > $OUT/s81-b1-sass.csv 2>&1; echo "source page rc=$?"; } > $OUT/s81-ncu.log 2>&1
tail -3 $OUT/s81-ncu.log
cd $OUT && tar czf s81-logs.tgz s81-*.log s81-b1-sass.csv && rm -f s81-*.log; ls
