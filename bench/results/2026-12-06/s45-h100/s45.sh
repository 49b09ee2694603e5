#!/usr/bin/env bash
# s45 (<= 170 s): s44 cut to a short lease: the item schedule's own case, the traced forward and the routing case
# (its exact-items variants) in one process; DSV4.1-Flash's matrix (the exact path plans items at B = 1) in another.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT)
t() {  # log filter
  { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: moejit_gpu_tests --duration=true -tc=\"$2\""
    timeout 165 moejit_gpu_tests --duration=true -tc="$2"; echo "rc=$?"; } > $OUT/$1 2>&1
}
t s45-items.log "the item schedule runs whole items*,a traced forward*,route ids outside*" &
t s45-dsv.log "DSV4.1-Flash matrix" &
wait
for f in $OUT/s45-*.log; do echo "== $f"; grep -E "^rc=|test cases:|ERROR|FATAL" $f | head -12; grep -E " s: " $f; done
