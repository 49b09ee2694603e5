#!/usr/bin/env bash
# s88: main at fea8fc9 (07b7a33 plus comments) (.device/main: the first_unit shortcut, the held-stage reads, every-thread stage release).
# On an H200 first (~250 s): acceptance 1 (defaults, both models, twice) and 2 (exact path; 75c91f4's bench,
# .device/old, same lease). On any card: racecheck (GLM5.2 B = 8 both paths, B = 1 and 16 fast), memcheck (B = 8).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; N=$PWD/.device/main; C=$(cat $N/COMMIT); O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s88-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s88-$log.log | awk '{print $1,$2,$6,$NF}' | tr '\n' ';'; echo
}
case $D in
  *H200*)
    b fast-1 $N $C
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    ;;
esac
export MOEJIT_CACHE_DIR=/tmp/c88
# GLM5.2 B = 8 (stream), B = 1 (the unit schedule's step owners), B = 16 (the token frame, 16-column loops)
for c in "racecheck 8 fast" "racecheck 8 exact" "racecheck 1 fast" "racecheck 16 fast" "memcheck 8 fast" "memcheck 8 exact"; do
  set -- $c; t=$1 bb=$2 p=$3
  { hdr $C compute-sanitizer --tool $t moejit run --model glm5.2 --batch $bb --path $p --seed 1
    timeout 120 compute-sanitizer --tool $t $N/moejit run --model glm5.2 --batch $bb --path $p --seed 1; echo "rc=$?"; } > $OUT/s88-$t-$bb-$p.log 2>&1
  echo "$t B=$bb $p: $(grep -E "SUMMARY|result:|rc=" $OUT/s88-$t-$bb-$p.log | tr '\n' ' ') at ${SECONDS}s"
done
cd $OUT && tar czf s88-logs.tgz s88-*.log && rm -f s88-*.log; ls
