#!/usr/bin/env bash
# s84: main with the tail's __syncthreads_or (293da01, .device/new). On an H200 first (~250 s): acceptance 1
# (defaults, both models, twice) and 2 (exact path, 75c91f4's bench, same lease). On any card: racecheck on
# GLM5.2 B = 8, fast and exact (is the tail's hazard gone?), then GPU tests that run the tail's last-out path
# over many forwards, every schedule and expert parallelism.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; N=$PWD/.device/new; C=$(cat $N/COMMIT); O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s84-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s84-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in
  *H200*)
    b fast-1 $N $C
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    ;;
esac
export MOEJIT_CACHE_DIR=/tmp/c84
for p in fast exact; do
  { hdr $C compute-sanitizer --tool racecheck moejit run --model glm5.2 --batch 8 --path $p --seed 1
    timeout 150 compute-sanitizer --tool racecheck $N/moejit run --model glm5.2 --batch 8 --path $p --seed 1; echo "rc=$?"; } > $OUT/s84-racecheck-$p.log 2>&1
  echo "racecheck $p: $(grep -E "RACECHECK SUMMARY|result:|rc=" $OUT/s84-racecheck-$p.log | tr '\n' ' ') at ${SECONDS}s"
  grep -E "Race reported" $OUT/s84-racecheck-$p.log | sed 's/ComputeConfig<[^>]*>>//; s/(.*)+/+/' | cut -c1-160
done
T="expert parallelism: every EP mode*,expert parallelism: the exact path*,a captured decode step*,8 layers sharing*,route ids outside*,the item schedule runs whole items*,the unit schedule at B = 1-4 on three*"
(( SECONDS < 480 )) && { hdr $C moejit_gpu_tests -tc="$T"; timeout $((570 - SECONDS)) $N/moejit_gpu_tests --duration=true -tc="$T"; echo "rc=$?"; } > $OUT/s84-tests.log 2>&1
grep -E "^[0-9.]+ s:|test cases:|assertions:|rc=" $OUT/s84-tests.log
cd $OUT && tar czf s84-logs.tgz s84-*.log && rm -f s84-*.log; ls
