#!/usr/bin/env bash
# s21 (one H200, ~3-4 min): issue 11's acceptance 2 in one lease: the exact path (and the fast, the default)
# against 75c91f4's bench (.device/old, built from 75c91f4 unchanged; its only path was the exact one), every B
# of both shapes, in the order old, exact, fast, exact, old, fast; the two fast runs are acceptance 1's two
# tables. Main = .device/bin (.device/COMMIT's binaries; the kernels of main since 1714a81, SASS-identical).
# First, the GPU cases that commit added (a device ordinal the machine lacks; host route checks on a non-blocking
# stream; a forward from a thread without a context).
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
C=$(cat .device/COMMIT); O=$PWD/.device/old/moejit_bench_moe
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
{ T="a layer refuses a GPU*,a forward from a thread*"; hdr "$C" moejit_gpu_tests -tc="$T"; timeout 120 moejit_gpu_tests -tc="$T"; echo "rc $?"; } \
  > $OUT/s21-0-gpu-case.log 2>&1
echo "gpu case at ${SECONDS}s: $(tail -1 $OUT/s21-0-gpu-case.log) $(grep 'test cases:' $OUT/s21-0-gpu-case.log)"
i=0
for r in old exact fast exact old fast; do
  i=$((i + 1)); [ $SECONDS -gt 520 ] && break
  case $r in
    old) { hdr 75c91f4 old/moejit_bench_moe; timeout 150 $O; echo "rc $?"; } > $OUT/s21-$i-old.log 2>&1 ;;
    *) { hdr "$C" moejit_bench_moe --path $r; timeout 150 moejit_bench_moe --path $r; echo "rc $?"; } > $OUT/s21-$i-$r.log 2>&1 ;;
  esac
  echo "$i $r at ${SECONDS}s: $(tail -1 $OUT/s21-$i-*.log)"
done
cd $OUT && tar czf s21-logs.tgz s21-*.log && rm s21-*.log
