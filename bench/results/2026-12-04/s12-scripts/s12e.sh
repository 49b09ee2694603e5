#!/usr/bin/env bash
# s12e: 0e02bfc (71be32c + PDL up to B = 4): both default sweeps twice (acceptance 1's record), the SM-partition
# cases alone, then the whole GPU matrix but them (tests-par, 6 shards) in the call's remaining time.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
C=$(paste -sd' ' .device/COMMIT); D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $C  device: $D"; echo "# command: $*"; }
b() { echo "#### $*"; hdr moejit_bench_moe "$@"; moejit_bench_moe "$@"; }
mkdir -p $OUT
for r in 1 2; do for m in glm5.2 dsv4.1-flash; do b --model $m > $OUT/s12e-bench-$m-$r.log 2>&1; done; done
echo "sweeps at ${SECONDS}s"
for m in glm5.2 dsv4.1-flash; do for r in 1 2; do awk -v t="$m-$r" '/^(glm5.2|dsv4.1-flash) +[0-9]+ /{s=s" "$2":"$6"("$10")"} END{print t s}' $OUT/s12e-bench-$m-$r.log; done; done
{ hdr moejit_gpu_tests --duration=true -tc='expert parallelism*,SM partitions*,two layers planned*'
  moejit_gpu_tests --duration=true -tc="expert parallelism*,SM partitions*,two layers planned*"; echo "rc=$?"; } > $OUT/s12e-partitions.log 2>&1
echo "partitions at ${SECONDS}s: $(tail -4 $OUT/s12e-partitions.log | paste -sd' ')"
GPU_TEST_SHARDS=6 GPU_TEST_PARTITIONS=0 DIST=$PWD/.device timeout $((595 - SECONDS)) tools/gpu_session.sh tests-par; echo "tests-par rc=$? at ${SECONDS}s"
cat $OUT/summary.txt 2>/dev/null
