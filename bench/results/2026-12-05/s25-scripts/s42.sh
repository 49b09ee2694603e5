#!/usr/bin/env bash
# s42 (~300 s): (1) the item schedule as planned (B = 1 on the exact path) against 75c91f4, two rounds; (2) ncu
# --set full on the compute kernel of 75c91f4 and of main's stream schedule, exact, DSV4.1-Flash B = 2: where
# today's exact kernel spends the 5-9% it takes longer than 75c91f4's per item (acceptance 2).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
B=$PWD/.device/bin; O=$PWD/.device/old; C=$(cat .device/COMMIT)
bench() {  # name bin commit round
  { hdr "$3" moejit_bench_moe --batches 1,2,4 --model M $([ $1 = old ] || echo --path exact)
    for m in glm5.2 dsv4.1-flash; do
      MOEJIT_CACHE_DIR=/tmp/c-$1 timeout 90 $2/moejit_bench_moe --batches 1,2,4 $([ $1 = old ] || echo --path exact) --model $m; done; } > $OUT/s42-bench-$1-$4.log 2>&1
  echo "$1 #$4 done at ${SECONDS}s"
}
bench old $O 75c91f4 1; bench main $B $C 1; bench main $B $C 2; bench old $O 75c91f4 2
grep -E "^(glm5.2|dsv4.1-flash) " $OUT/s42-bench-*.log | awk '{print $1, $2, $3, $7}' | head -30
# The fast path's schedules at B = 1-2 on today's kernels (stream was last measured against units at B = 1 on 12-03's).
{ hdr "$C" moejit_bench_moe --batches 1,2 --schedule planned,stream,units --model M
  for m in dsv4.1-flash glm5.2; do MOEJIT_CACHE_DIR=/tmp/c-main timeout 90 $B/moejit_bench_moe --batches 1,2 --schedule planned,stream,units --model $m; done; } > $OUT/s42-fast-schedules.log 2>&1
echo "fast schedules done at ${SECONDS}s"
# The exact path's knobs at DSV4.1-Flash B = 2-4 that the planner does not pick (a second activation warp; 2 CTAs an
# SM with the ring it then fits), beside the plan.
{ hdr "$C" moejit_bench_moe --path exact --model dsv4.1-flash --batches 2,4 --activation-warps 0,2 --ctas-per-sm 0,2 --schedule planned,items
  MOEJIT_CACHE_DIR=/tmp/c-main timeout 120 $B/moejit_bench_moe --path exact --model dsv4.1-flash --batches 2,4 \
    --activation-warps 0,2 --ctas-per-sm 0,2 --schedule planned,items; } > $OUT/s42-exact-knobs.log 2>&1
echo "exact knobs done at ${SECONDS}s"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for v in old main; do
  bin=$O; args=""; c=75c91f4
  [ $v = main ] && bin=$B && args="--path exact" && c=$C
  { hdr $c ncu --clock-control none --set full -k regex:compute --launch-skip 12 --launch-count 1 moejit_bench_moe $args --model dsv4.1-flash --batches 2
    MOEJIT_CACHE_DIR=/tmp/c-$v timeout 150 $NCU --clock-control none --set full -k regex:compute --launch-skip 12 --launch-count 1 \
      $bin/moejit_bench_moe $args --model dsv4.1-flash --batches 2; } > $OUT/s42-ncu-$v.log 2>&1
  echo "ncu $v done at ${SECONDS}s: $(grep -cE 'Duration|Executed Ipc' $OUT/s42-ncu-$v.log) lines"
done
cd $OUT && tar czf s42-logs.tgz s42-*.log && rm s42-*.log
