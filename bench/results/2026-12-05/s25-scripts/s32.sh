#!/usr/bin/env bash
# s32 (<= ~330 s): PDL planned on the exact atom up to B = 4 (.device/res) checked - `moejit run` on both models'
# exact B = 1, 2, 4, the GPU cases that run the exact path at B <= 4 on one GPU, three processes at once - then
# measured: old / res / base / res / base / old, the exact path at B = 1-8 on both models (base = .device/bin,
# main's kernels without it; the kernels are the same, only the launch's PDL attribute differs).
set -uo pipefail
export MOEJIT_CACHE_DIR=/tmp/moejit-cache
R=$PWD/.device/res/bin B=$PWD/.device/bin O=$PWD/.device/old/moejit_bench_moe
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/res/COMMIT); CB=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; [ $SECONDS -gt ${S32_DEADLINE:-300} ] && { echo "$n skipped at ${SECONDS}s"; return; }
  { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s32-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s32-$n.log)"; }
echo "device: $D"
{
for m in dsv4.1-flash glm5.2; do for b in 1 2 4; do
  hdr "$C" moejit run --model $m --batch $b --path exact; timeout 60 $R/moejit run --model $m --batch $b --path exact 2>&1 | grep -E "pdl|PDL|result"; echo "rc ${PIPESTATUS[0]}"
done; done
} > $OUT/s32-00-run.log 2>&1
echo "res checks at ${SECONDS}s: $(grep -c 'result: PASS' $OUT/s32-00-run.log) PASS, $(grep -c -E 'FAIL|rc [1-9]' $OUT/s32-00-run.log) FAIL"
g() { { hdr "$C" moejit_gpu_tests -tc="$2"; timeout 200 $R/moejit_gpu_tests -tc="$2"; echo "rc $?"; } > $OUT/s32-0$1-gpu.log 2>&1; }
g 1 "GLM5.2 matrix,Table 10 edges" & g 2 "DSV4.1-Flash matrix,H and I multiples*" &
g 3 "gpt-oss-120b and gpt-oss-20b matrix*,gpt-oss's block*,DSV4.1-Flash with the fused*,GLM5.2 with the fused*" & wait
for i in 1 2 3; do echo "gpu $i at ${SECONDS}s: $(grep -E '^\[doctest\] (test cases|assertions)' $OUT/s32-0$i-gpu.log | paste -sd' ') $(tail -1 $OUT/s32-0$i-gpu.log)"; done
X="--path exact --batches 1,2,4,8"
r 1-old 75c91f4 60 $O
r 2-res "$C" 40 $R/moejit_bench_moe $X
r 3-base "$CB" 40 $B/moejit_bench_moe $X
r 4-res "$C" 40 $R/moejit_bench_moe $X
r 5-base "$CB" 40 $B/moejit_bench_moe $X
r 6-old 75c91f4 60 $O
cd $OUT && for f in s32-[1-6]-*.log; do echo "== $f"; grep -E '^(glm5.2|dsv4.1-flash) ' $f | awk '$2<=8 {print $1, $2, $6, $NF}' | paste -sd' '; done
tar czf s32-logs.tgz s32-*.log && rm s32-*.log
