#!/usr/bin/env bash
# s86 (any card, ~420 s): (1) s85: racecheck of the every-thread stage release (92559e8, .device/rel) and its
# A/B against 293da01 (.device/new) on 80 SMs; (2) B = 1-4 on all SMs, rounds new, vb, vc, vc, vb, new:
# vb = 0dbaad3 (the unit schedule's first_unit without the search where every expert has one token tile),
# vc = 0af9f23 (vb + compute triggers the finalize's launch at entry); (3) vc's GPU tests over the PDL chain.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"
bash .device/scripts/s85.sh
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log dir args...
  local log=$1 bin=$PWD/.device/$2 c; c=$(cat $PWD/.device/$2/COMMIT); shift 2
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 100 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s86-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s86-$log.log | awk '{print $1,$2,$5,$6}' | tr '\n' ';'; echo
}
i=0
for v in new vb vc vc vb new; do i=$((i + 1)); b $i-$v $v --batches 1,2,4; done
T="a captured decode step*,8 layers sharing*,the unit schedule at B = 1-4 on three*,route ids outside*,the item schedule runs whole items*"
C=$(cat .device/vc/COMMIT)
(( SECONDS < 500 )) && { hdr $C moejit_gpu_tests -tc="$T"; timeout $((580 - SECONDS)) .device/vc/moejit_gpu_tests --duration=true -tc="$T"; echo "rc=$?"; } > $OUT/s86-tests.log 2>&1
grep -E "^[0-9.]+ s:|test cases:|assertions:|rc=" $OUT/s86-tests.log
cd $OUT && tar czf s86-logs.tgz s86-*.log && rm -f s86-*.log; ls
