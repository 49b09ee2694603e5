#!/usr/bin/env bash
# s83: any card first: racecheck on bench/racecheck/mbarrier_handoff.cu with its new `tail` kernel (does
# moe_compute's end-of-forward pattern alone draw the hazards s82 saw on the tail's word?). Then, on an H200 only
# (~300 s): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path and 75c91f4's bench, same
# lease), then the token frame at B = 1-8 if time is left.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
{ hdr $C compute-sanitizer --tool racecheck mbarrier_handoff; timeout 60 compute-sanitizer --tool racecheck .device/racecheck/mbarrier_handoff; echo "rc=$?"; } > $OUT/s83-racecheck-repro.log 2>&1
grep -E "Race reported|SUMMARY|wrong|rc=" $OUT/s83-racecheck-repro.log
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s83-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s83-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in
  *H200*)
    b fast-1 $N $C
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    if (( SECONDS < 380 )); then b frame-small $N $C --batches 1,2,4,8 --token-frame off,on; fi
    ;;
esac
cd $OUT && tar czf s83-logs.tgz s83-*.log && rm -f s83-*.log; ls
