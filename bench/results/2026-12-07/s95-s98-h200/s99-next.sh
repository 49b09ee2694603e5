#!/usr/bin/env bash
# s99 (~2 min): GLM5.2 B = 256, main's kernels (.device/sy, 4006160) against the SASS-proportioned step costs
# (.device/sc, 5413abe on branch step-cost), A B B A twice, then each traced once. Each binary its own kernel cache.
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT
b() { local v=$1; shift; echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$v/COMMIT)  device: $D"
  echo "# command: moejit_bench_moe --model glm5.2 --batches 256 $*"
  MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 .device/$v/bin/moejit_bench_moe --model glm5.2 --batches 256 "$@"; }
for v in sy sc sc sy sy sc sc sy; do b $v >> $OUT/s99-$v.log 2>&1; done
for v in sy sc; do b $v --trace >> $OUT/s99-trace-$v.log 2>&1; done
for v in sy sc; do echo "$v: $(grep -hE '^glm5.2 +256' $OUT/s99-$v.log | awk '{print $6}' | tr '\n' ' ')"; done
grep -hE "consumers done|GEMM1 K128|^glm" $OUT/s99-trace-*.log
# The branch's layer against the CPU references at the point it moves most (the shares only: every kernel's code is main's).
MOEJIT_CACHE_DIR=/tmp/c-sc timeout 120 .device/sc/bin/moejit run --model glm5.2 --batch 256 > $OUT/s99-run-sc.log 2>&1; tail -3 $OUT/s99-run-sc.log
