#!/usr/bin/env bash
# s33 (<= ~300 s): the runtime's two unrun changes on the GPU (.device/res): buffers over many chunks of a
# virtual-memory reservation measured across them (the VMM walk), and a layer's setup on its setup stream, relaxed
# against another thread's global-mode capture; their new GPU cases, then the cases whose paths they change
# (weights and biases copied at setup, caller workspaces, captures, threads), three processes at once.
set -uo pipefail
export MOEJIT_CACHE_DIR=/tmp/moejit-cache
R=$PWD/.device/res/bin
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/res/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
g() { { hdr "$C" moejit_gpu_tests -tc="$2"; timeout ${3:-200} $R/moejit_gpu_tests -tc="$2"; echo "rc $?"; } > $OUT/s33-$1.log 2>&1; }
g 0-new "buffers over many chunks*,a layer built and run in one thread while another*" 120
echo "new at ${SECONDS}s: $(grep -E '^\[doctest\] (test cases|assertions)' $OUT/s33-0-new.log | paste -sd' ') $(tail -1 $OUT/s33-0-new.log)"
grep -E "RANGE|MAPPING|chunks of|seam" $OUT/s33-0-new.log | head -8
g 1 "gpt-oss's block*,NaN and infinite biases*,weight scale codes the exact path*,W4A16 recipe*" &
g 2 "a layer over weights packed*,8 layers sharing one caller workspace*,8 threads x mixed*,TensorMap cache*" &
g 3 "a captured decode step*,a graph captured on a stream the layer released*,a forward from a thread*,a layer refuses a GPU*,a forward of B launches*,a traced forward*" &
wait
for i in 1 2 3; do echo "gpu $i at ${SECONDS}s: $(grep -E '^\[doctest\] (test cases|assertions)' $OUT/s33-$i.log | paste -sd' ') $(tail -1 $OUT/s33-$i.log)"; done
{ hdr "$C" moejit run --model glm5.2 --batch 8; timeout 60 $R/moejit run --model glm5.2 --batch 8 2>&1 | tail -2; echo "rc ${PIPESTATUS[0]}"; } > $OUT/s33-4-run.log 2>&1
echo "run at ${SECONDS}s: $(grep -c 'result: PASS' $OUT/s33-4-run.log) PASS $(tail -1 $OUT/s33-4-run.log)"
cd $OUT && tar czf s33-logs.tgz s33-*.log && rm s33-*.log
