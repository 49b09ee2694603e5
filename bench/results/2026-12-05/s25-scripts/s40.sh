#!/usr/bin/env bash
# s40 (<= ~150 s): s39's runtime patch (.device/res) on the GPU: its two new cases, then the runtime cases its setup
# and graph changes touch, three processes at once.
set -uo pipefail
export MOEJIT_CACHE_DIR=/tmp/moejit-cache
R=$PWD/.device/res/bin
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/res/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
g() { { hdr "$C" moejit_gpu_tests -tc="$2"; timeout ${3:-100} $R/moejit_gpu_tests -tc="$2"; echo "rc $?"; } > $OUT/s40-$1.log 2>&1; }
g 0-new "a layer built and run in one thread while another*,a batch size's first forward compiles without*" 60
echo "new at ${SECONDS}s: $(grep -E '^\[doctest\] (test cases|assertions)' $OUT/s40-0-new.log | paste -sd' ') $(tail -1 $OUT/s40-0-new.log)"
grep -E "ERROR|FATAL|MESSAGE|WARNING" $OUT/s40-0-new.log | head -12
g 1 "gpt-oss's block*,NaN and infinite biases*,weight scale codes the exact path*,W4A16 recipe*" &
g 2 "a layer over weights packed*,8 layers sharing one caller workspace*,8 threads x mixed*,TensorMap cache*,buffers over many chunks*" &
g 3 "a captured decode step*,a graph captured on a stream the layer released*,a forward from a thread*,a layer refuses a GPU*,a forward of B launches*,a traced forward*" &
wait
for i in 1 2 3; do echo "gpu $i at ${SECONDS}s: $(grep -E '^\[doctest\] (test cases|assertions)' $OUT/s40-$i.log | paste -sd' ') $(tail -1 $OUT/s40-$i.log)"; done
grep -h -E "ERROR|FATAL" $OUT/s40-[123].log | head -8
cd $OUT && tar czf s40-logs.tgz s40-*.log && rm s40-*.log
