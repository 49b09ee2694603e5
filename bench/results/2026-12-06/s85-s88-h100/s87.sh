#!/usr/bin/env bash
# s87 (any card, ~420 s): d1 = ea9cdcf (main + the unit schedule's first_unit shortcut + the loops' unused last
# reads of a stage moved to the held stage), d2 = 4b78276 (d1 + every consumer thread releases the stage).
# racecheck GLM5.2 B = 8 (d1 fast, d2 fast and exact); the bench on all SMs, rounds new, d1, d2, d2, d1, new;
# GPU tests of d1 and d2.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
rc() {  # dir path
  local d=$PWD/.device/$1 c; c=$(cat $PWD/.device/$1/COMMIT)
  { hdr $c compute-sanitizer --tool racecheck moejit run --model glm5.2 --batch 8 --path $2 --seed 1
    MOEJIT_CACHE_DIR=/tmp/c87 timeout 150 compute-sanitizer --tool racecheck $d/moejit run --model glm5.2 --batch 8 --path $2 --seed 1; echo "rc=$?"; } > $OUT/s87-racecheck-$1-$2.log 2>&1
  echo "racecheck $1 $2: $(grep -E "RACECHECK SUMMARY|result:|rc=" $OUT/s87-racecheck-$1-$2.log | tr '\n' ' ') at ${SECONDS}s"
  grep -E "Race reported" $OUT/s87-racecheck-$1-$2.log | sed 's/ComputeConfig<[^>]*>>//; s/(.*)+/+/' | cut -c1-160
}
rc d1 fast; rc d2 fast; rc d2 exact
b() {  # log dir args...
  local log=$1 bin=$PWD/.device/$2 c; c=$(cat $PWD/.device/$2/COMMIT); shift 2
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 100 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s87-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s87-$log.log | awk '{print $1,$2,$5,$6}' | tr '\n' ';'; echo
}
i=0
for v in new d1 d2 d2 d1 new; do i=$((i + 1)); b $i-$v $v --batches 1,2,8,16,64,256; done
T="a captured decode step*,8 layers sharing*,the unit schedule at B = 1-4 on three*,route ids outside*,the item schedule runs whole items*"
for v in d1 d2; do
  C=$(cat .device/$v/COMMIT)
  (( SECONDS < 510 )) && { hdr $C moejit_gpu_tests -tc="$T"; timeout $((585 - SECONDS)) .device/$v/moejit_gpu_tests --duration=true -tc="$T"; echo "rc=$?"; } > $OUT/s87-tests-$v.log 2>&1
  echo "tests $v:"; grep -E "^[0-9.]+ s:|test cases:|assertions:|rc=" $OUT/s87-tests-$v.log
done
cd $OUT && tar czf s87-logs.tgz s87-*.log && rm -f s87-*.log; ls
