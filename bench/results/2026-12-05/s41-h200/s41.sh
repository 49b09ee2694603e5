#!/usr/bin/env bash
# s41 (~220 s): the item schedule (whole items dealt round-robin, GEMM1's then GEMM2's, as 75c91f4 dealt them)
# on the exact path, experiment build .device/exp (the exact and W4A16 atoms walk ItemWalker instead of the
# stream shares): checks, then old / exp / base / exp / base / old, `--path exact`, every B, both models.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
X=$PWD/.device/exp/bin; B=$PWD/.device/bin; O=$PWD/.device/old
{ for a in "dsv4.1-flash 1" "dsv4.1-flash 2" "dsv4.1-flash 4" "dsv4.1-flash 8" "dsv4.1-flash 64" "glm5.2 2" "glm5.2 16" "glm5.2 256"; do
    set -- $a; hdr "$(cat .device/exp/COMMIT)" moejit run --path exact --model $1 --batch $2
    MOEJIT_CACHE_DIR=/tmp/c-exp timeout 60 $X/moejit run --path exact --model $1 --batch $2 2>&1 | grep -E "result|cos" | tail -3
  done
  hdr x moejit run --recipe w4a16 --batch 2; MOEJIT_CACHE_DIR=/tmp/c-exp timeout 60 $X/moejit run --recipe w4a16 --batch 2 2>&1 | grep -E "result" | tail -2
  hdr x moejit run --model gpt-oss-120b --path exact --batch 4; MOEJIT_CACHE_DIR=/tmp/c-exp timeout 60 $X/moejit run --model gpt-oss-120b --path exact --batch 4 2>&1 | grep -E "result" | tail -2
} > $OUT/s41-run.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c 'result: PASS' $OUT/s41-run.log) PASS, $(grep -c 'FAIL' $OUT/s41-run.log) FAIL"
bench() {  # name bin commit
  { hdr "$3" moejit_bench_moe --path exact --model glm5.2,dsv4.1-flash; for m in glm5.2 dsv4.1-flash; do
      MOEJIT_CACHE_DIR=/tmp/c-$1 timeout 120 $2/moejit_bench_moe $([ $1 = old ] || echo --path exact) --model $m; done; } > $OUT/s41-bench-$1-$4.log 2>&1
  echo "$1 #$4 done at ${SECONDS}s"
}
bench old $O 75c91f4 1; bench exp $X "$(cat .device/exp/COMMIT)" 1; bench base $B "$(cat .device/COMMIT)" 1
bench exp $X "$(cat .device/exp/COMMIT)" 2; bench base $B "$(cat .device/COMMIT)" 2; bench old $O 75c91f4 2
cd $OUT && tar czf s41-logs.tgz s41-*.log && rm s41-*.log
