#!/usr/bin/env bash
# s91 (any card, one call of ~560 s): spill-y (.device/sy, 4006160: every consumer thread releases its stages after
# a __syncwarp) against main's kernels (.device/main, 0572c71 = c43f117's templates). The whole GPU matrix on sy
# (5 shards and the solo case, tools/gpu_session.sh tests-par; the partition cases left out) while racecheck runs
# sy beside it (GLM5.2 B = 8 both paths, B = 1 and 16 fast); then, the GPU to itself, the bench on all SMs in
# rounds main, sy, sy, main (B = 1, 2, 16, 128, 256) as long as the call's time lasts; memcheck at the end.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; N=$PWD/.device/main; C=$(cat $N/COMMIT)
S=$PWD/.device/sy/bin; SC=$(cat $PWD/.device/sy/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
DIST=$PWD/.device/sy GPU_TEST_SHARDS=5 GPU_TEST_PARTITIONS=0 OUT=$OUT/matrix MOEJIT_CACHE_DIR=/tmp/cm \
  timeout 430 tools/gpu_session.sh tests-par > $OUT/s91-matrix-stdout.log 2>&1 &
MP=$!
rc() {  # model batch path
  local m=$1 bb=$2 p=$3
  { hdr $SC compute-sanitizer --tool racecheck moejit run --model $m --batch $bb --path $p --seed 1
    MOEJIT_CACHE_DIR=/tmp/c91 timeout 150 compute-sanitizer --tool racecheck $S/moejit run --model $m --batch $bb --path $p --seed 1; echo "rc=$?"; } > $OUT/s91-racecheck-$m-$bb-$p.log 2>&1
  echo "racecheck $m B=$bb $p: $(grep -E "SUMMARY|result:|rc=" $OUT/s91-racecheck-$m-$bb-$p.log | tr '\n' ' ') at ${SECONDS}s"
  grep -E "Race reported" $OUT/s91-racecheck-$m-$bb-$p.log | sed 's/ComputeConfig<[^>]*>>//; s/(.*)+/+/' | cut -c1-160 | head -5
}
rc glm5.2 8 fast; rc glm5.2 8 exact; rc glm5.2 1 fast; rc glm5.2 16 fast
wait $MP; echo "matrix rc=$? at ${SECONDS}s"; cat $OUT/matrix/summary.txt; tail -40 $OUT/s91-matrix-stdout.log | grep -E "ERROR|FATAL" | head
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 100 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s91-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s91-$log.log | awk '{print $1,$2,$6,$NF}' | tr '\n' ';'; echo
}
i=0
for v in main sy sy main; do i=$((i + 1))
  (( SECONDS < 500 )) || { echo "round $i ($v) left out at ${SECONDS}s"; continue; }
  if [ $v = main ]; then b $i-$v $N $C --batches 1,2,16,128,256; else b $i-$v $S $SC --batches 1,2,16,128,256; fi
done
if (( SECONDS < 540 )); then
  { hdr $SC compute-sanitizer --tool memcheck moejit run --model glm5.2 --batch 8 --path fast --seed 1
    MOEJIT_CACHE_DIR=/tmp/c91 timeout $((585 - SECONDS)) compute-sanitizer --tool memcheck $S/moejit run --model glm5.2 --batch 8 --path fast --seed 1; echo "rc=$?"; } > $OUT/s91-memcheck-8-fast.log 2>&1
  echo "memcheck B=8 fast: $(grep -E "SUMMARY|result:|rc=" $OUT/s91-memcheck-8-fast.log | tr '\n' ' ') at ${SECONDS}s"
fi
cd $OUT && tar czf s91-logs.tgz s91-*.log matrix && rm -rf s91-*.log matrix; ls
