#!/usr/bin/env bash
# s71 (~100 s): the token frame's dispatch after the review fix, BF16 x restored to 1fe810c's code: the BF16-input
# case, the all-zero-block case, one `moejit run` with BF16 x.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/COMMIT); N=$PWD/.device/bin
echo "device: $D commit: $C"; export MOEJIT_CACHE_DIR=/tmp/c71
{ echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"
  timeout 200 $N/moejit_gpu_tests --duration=true -tc="pre-quantized x with an all-zero block*,BF16 input is quantized*"; echo "rc=$?"
  timeout 60 $N/moejit run --model glm5.2 --batch 16 --input-bf16 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; } > $OUT/s71.log 2>&1
grep -E "^\S+ +(mxfp8|bf16)" $OUT/s71.log | awk '{print $1,$2,$4,$5,$NF}'; grep -E "Status|rc=|nan=" $OUT/s71.log | tail -6
