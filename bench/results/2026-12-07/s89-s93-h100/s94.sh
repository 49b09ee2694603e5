#!/usr/bin/env bash
# s94 (~250 s): on an H200, acceptance 1 (defaults, both models, twice: .device/main, main's kernels) and 2 (the
# exact path beside 75c91f4's bench, .device/old, in the same lease). On another card the same runs are a record
# of that card, not the acceptance's numbers.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; N=$PWD/.device/main; C=$(cat $N/COMMIT); O=$PWD/.device/old
case $D in *H200*) ;; *) echo "not an H200: these runs are no timing for acceptance 1 or 2" ;; esac
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s94-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s94-$log.log | awk '{print $1,$2,$6,$NF}' | tr '\n' ';'; echo
}
b fast-1 $N $C
b old $O 75c91f4
b exact $N $C --path exact
b fast-2 $N $C
cd $OUT && tar czf s94-logs.tgz s94-*.log && rm -f s94-*.log; ls
