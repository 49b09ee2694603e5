#!/usr/bin/env bash
# s70: the token frame's review fixes (the frame over the blocks with a nonzero element): the new GPU case, the
# BF16-input and E4M3-subnormal cases, two `moejit run` checks (~120 s). On an H200 first acceptance 1 and 2
# (main's defaults twice, the exact path, 75c91f4's bench; ~250 s).
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s70-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s70-$log.log | awk '{print $1,$2,$6,$NF}'
}
case $D in *H200*) b fast-1 $N $C; b exact $N $C --path exact; b old $O 75c91f4; b fast-2 $N $C ;; esac
export MOEJIT_CACHE_DIR=/tmp/c70
{ hdr $C moejit_gpu_tests -tc="pre-quantized x with an all-zero block*,BF16 input is quantized*,E4M3 subnormal activations"
  timeout 300 $N/moejit_gpu_tests --duration=true -tc="pre-quantized x with an all-zero block*,BF16 input is quantized*,E4M3 subnormal activations"
  echo "rc=$?"; } > $OUT/s70-tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\S+ +(mxfp8|bf16)" $OUT/s70-tests.log | awk '{print $1,$2,$4,$5,$NF}' | head -40; tail -4 $OUT/s70-tests.log
{ for a in "glm5.2 16 --input-bf16" "dsv4.1-flash 128"; do set -- $a; m=$1 bb=$2; shift 2
    hdr $C moejit run --model $m --batch $bb "$@"; timeout 100 $N/moejit run --model $m --batch $bb "$@" 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done; } > $OUT/s70-runs.log 2>&1
grep -E "PASS|FAIL|rc=" $OUT/s70-runs.log
