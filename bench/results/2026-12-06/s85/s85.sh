#!/usr/bin/env bash
# s85 (any card, ~170 s): the stage ring released by every consumer thread (92559e8, .device/rel) against
# 293da01 (.device/new, lane 0 after __syncwarp). racecheck on GLM5.2 B = 8, fast and exact; the bench A/B,
# rounds new, rel, rel, new (B = 1, 2, 8, 64, 256 on 80 SMs: the H200's bytes a clock per SM);
# (92559e8 was not landed: its step owners' GEMM2 loop issues 649 -> 678 instructions a step; patch in s85/.)
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; R=$PWD/.device/rel; W=$PWD/.device/new; CR=$(cat $R/COMMIT); CW=$(cat $W/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
for p in fast exact; do
  { hdr $CR compute-sanitizer --tool racecheck moejit run --model glm5.2 --batch 8 --path $p --seed 1
    MOEJIT_CACHE_DIR=/tmp/c85 timeout 150 compute-sanitizer --tool racecheck $R/moejit run --model glm5.2 --batch 8 --path $p --seed 1; echo "rc=$?"; } > $OUT/s85-racecheck-$p.log 2>&1
  echo "racecheck $p: $(grep -E "RACECHECK SUMMARY|result:|rc=" $OUT/s85-racecheck-$p.log | tr '\n' ' ') at ${SECONDS}s"
  grep -E "Race reported" $OUT/s85-racecheck-$p.log | sed 's/ComputeConfig<[^>]*>>//; s/(.*)+/+/' | cut -c1-160
done
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 100 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s85-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s85-$log.log | awk '{print $1,$2,$5,$6}' | tr '\n' ';'; echo
}
for r in new-1 rel-1 rel-2 new-2; do
  case $r in new*) bin=$W c=$CW;; *) bin=$R c=$CR;; esac
  b $r $bin $c --sm-count 80 --batches 1,2,8,64,256
done
cd $OUT && tar czf s85-logs.tgz s85-*.log && rm -f s85-*.log; ls
