#!/usr/bin/env bash
# s66 (~300 s, any card): the token frame (GEMM1's rows in one scale frame per token). First `moejit run`'s
# checks against the CPU references on the planned kernels (frame on), then the A/B bench: on 80 SMs at
# B = 16-256 (--token-frame off,on and on,off), and on all SMs at B = 1-8.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
export MOEJIT_CACHE_DIR=/tmp/c66
{ for a in "glm5.2 1" "glm5.2 2" "glm5.2 8" "glm5.2 16" "glm5.2 256" "dsv4.1-flash 4" "dsv4.1-flash 64" \
           "dsv4.1-flash 128 --input-bf16" "glm5.2 32 --shared-expert" "gpt-oss-120b 64" "glm5.2 64 --token-frame off"; do
    set -- $a; m=$1 b=$2; shift 2
    hdr moejit run --model $m --batch $b "$@"
    timeout 120 $N/moejit run --model $m --batch $b "$@" 2>&1 | grep -v "^\s*-" | tail -6; echo "rc=${PIPESTATUS[0]}"
  done; } > $OUT/s66-runs.log 2>&1
echo "runs at ${SECONDS}s: $(grep -c '^rc=0' $OUT/s66-runs.log) of $(grep -c '^rc=' $OUT/s66-runs.log) rc=0"
grep -E "cos|rc=|PASS|FAIL" $OUT/s66-runs.log | head -40
b() {  # log args...
  local log=$1; shift
  { for m in glm5.2 dsv4.1-flash; do hdr moejit_bench_moe --model $m "$@"
      timeout 150 $N/moejit_bench_moe --model $m "$@"; done; } > $OUT/s66-$log.log 2>&1
  echo "$log at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s66-$log.log
}
b sm80-off-on --sm-count 80 --batches 16,32,64,128,256 --token-frame off,on
b sm80-on-off --sm-count 80 --batches 16,32,64,128,256 --token-frame on,off
b small-off-on --batches 1,2,4,8 --token-frame off,on
cd $OUT && tar czf s66-logs.tgz --exclude='*.tgz' s66-* && ls -la
