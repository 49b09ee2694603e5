#!/usr/bin/env bash
# s82: one lease, whichever card comes. On an H200 (~400 s): acceptance 1 (main's defaults, both models, twice),
# 2 (the exact path, and 75c91f4's bench, same lease), the token frame's A/B at B = 16-256 and B = 1-8, the K-loop
# probe, the exact path's schedules at B = 1-8; then s81 (racecheck, ncu B = 1) if time is left. On another card
# (~220 s): the exact path's schedules at B = 1-8 against 75c91f4, then s81.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s82-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s82-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in
  *H200*)
    b fast-1 $N $C
    b old $O 75c91f4
    b exact $N $C --path exact
    b exact-sched $N $C --path exact --schedule planned,items --batches 1,2,4,8
    b fast-2 $N $C
    b frame-small $N $C --batches 1,2,4,8 --token-frame off,on
    b frame-off-on $N $C --batches 16,32,64,128,256 --token-frame off,on
    { hdr $C moejit_kloop_probe; timeout 60 $N/moejit_kloop_probe; } > $OUT/s82-probe.log 2>&1
    cd $OUT && tar czf s82-logs.tgz s82-*.log && rm -f s82-*.log; cd - >/dev/null
    if (( SECONDS < 400 )); then timeout $((580 - SECONDS)) bash .device/scripts/s81.sh; fi
    ;;
  *)  # the exact path's schedule at B = 1-8 against 75c91f4 (acceptance 2's DSV4.1-Flash B = 2 on the H200)
    b old-small $O 75c91f4 --batches 1,2,4,8
    b exact-sched $N $C --path exact --schedule planned,items --batches 1,2,4,8
    b old-small-2 $O 75c91f4 --batches 1,2,4,8
    cd $OUT && tar czf s82-logs.tgz s82-*.log && rm -f s82-*.log; cd - >/dev/null
    bash .device/scripts/s81.sh ;;
esac
ls $OUT
