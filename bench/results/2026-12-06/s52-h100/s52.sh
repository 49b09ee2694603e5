#!/usr/bin/env bash
# s52 (~120 s): GEMM1's short segments paired in the 16-column token tiles (B >= 16; MoeCodegenOptions::paired_rows,
# the uncommitted tree in .device/exp): correctness by `moejit run` against the CPU reference, then the fast path
# with pairing off (today's plan) and on at B = 16-256, both models, in two processes of opposite order.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
E=$PWD/.device/exp; CE="$(cat .device/COMMIT)+paired16"
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $CE  device: $D"; echo "# command: $*"; }
{ for mb in glm5.2:16 glm5.2:64 dsv4.1-flash:32 dsv4.1-flash:128; do m=${mb%:*}; b=${mb#*:}
    hdr moejit run --model $m --batch $b --paired-rows on
    MOEJIT_CACHE_DIR=/tmp/c-exp timeout 120 $E/moejit run --model $m --batch $b --paired-rows on 2>&1 | tail -4; done
} > $OUT/s52-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c PASS $OUT/s52-run.log) PASS, $(grep -c FAIL $OUT/s52-run.log) FAIL"
for order in off,on on,off; do
  { for m in glm5.2 dsv4.1-flash; do hdr moejit_bench_moe --model $m --batches 16,32,64,128,256 --paired-rows $order
      MOEJIT_CACHE_DIR=/tmp/c-exp timeout 150 $E/moejit_bench_moe --model $m --batches 16,32,64,128,256 --paired-rows $order; done
  } > $OUT/s52-ab-$order.log 2>&1
  echo "ab $order at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s52-ab-$order.log
done
cd $OUT && tar czf s52-logs.tgz s52-*.log && rm s52-*.log
