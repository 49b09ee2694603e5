#!/usr/bin/env bash
# s13g: acceptance 1's second run on 48f76c6, GLM5.2 B = 2 with one activation warp against three, and the GPU
# matrix's cases nearest the change (the two shapes' matrices, the unit schedules, Table 10, hostile routes,
# scale codes, subnormal activations) in four processes at once.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
for m in glm5.2 dsv4.1-flash; do
  { hdr moejit_bench_moe --model $m; timeout 120 moejit_bench_moe --model $m; } > $OUT/s13g-bench-$m.log 2>&1
  echo "$m at ${SECONDS}s"
done
for a in 1,0 0,1; do
  { hdr moejit_bench_moe --model glm5.2 --batches 2,3 --activation-warps $a; timeout 60 moejit_bench_moe --model glm5.2 --batches 2,3 --activation-warps $a; } >> $OUT/s13g-b2-act.log 2>&1
done
echo "ab at ${SECONDS}s"
T=$((330 - SECONDS)); [ $T -gt 230 ] && T=230
i=0
for f in "GLM5.2 matrix" "DSV4.1-Flash matrix" "the unit schedule at B = 1-4 on three warpgroups*,the unit schedule at B = 1-4 on two warpgroups*" \
         "Table 10 edges,route ids outside*,E4M3 subnormal activations,weight scale codes over the whole range*"; do
  i=$((i + 1))
  ( hdr moejit_gpu_tests --duration=true -tc="$f"; timeout $T moejit_gpu_tests --duration=true -tc="$f"; echo "rc $?" ) > $OUT/s13g-gpu-$i.log 2>&1 &
done
wait
echo "gpu at ${SECONDS}s (limit $T s each)"; for i in 1 2 3 4; do echo "$i: $(tail -1 $OUT/s13g-gpu-$i.log) $(grep -c ' PASS' $OUT/s13g-gpu-$i.log) PASS lines, $(grep -c FAIL $OUT/s13g-gpu-$i.log) FAIL"; grep "test cases:" $OUT/s13g-gpu-$i.log; done
