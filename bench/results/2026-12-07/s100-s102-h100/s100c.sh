#!/usr/bin/env bash
# s100c (~2 min; s100b without traces, for a budget of ~350 s): GLM5.2 B = 256 main (.device/sy, 4006160) /
# step-cost (.device/sc, 5413abe) A B B A; B = 1, 2 on both models main / tail (.device/st, 363ee1e) A B B A;
# the branches' layers against the CPU references where they move (sc B = 256, st B = 1, 2).
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); mkdir -p $OUT
b() { local v=$1 m=$2 bs=$3; shift 3; echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/$v/COMMIT)  device: $D"
  echo "# command: moejit_bench_moe --model $m --batches $bs $*"
  MOEJIT_CACHE_DIR=/tmp/c-$v timeout 60 .device/$v/bin/moejit_bench_moe --model $m --batches $bs "$@"; }
for v in sy sc sc sy; do b $v glm5.2 256 >> $OUT/s100-256-$v.log 2>&1; done
for v in sy sc; do echo "256 $v: $(grep -hE '^glm5.2 +256' $OUT/s100-256-$v.log | awk '{print $6}' | tr '\n' ' ')"; done
for v in sy st st sy; do for m in glm5.2 dsv4.1-flash; do b $v $m 1,2 >> $OUT/s100-small-$v.log 2>&1; done; done
for v in sy st; do for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
  echo "$v $m B=$bb: $(grep -hE "^$m +$bb " $OUT/s100-small-$v.log | awk '{print $6}' | tr '\n' ' ')"; done; done; done
MOEJIT_CACHE_DIR=/tmp/c-sc timeout 60 .device/sc/bin/moejit run --model glm5.2 --batch 256 > $OUT/s100-run-sc.log 2>&1; tail -2 $OUT/s100-run-sc.log
for m in glm5.2 dsv4.1-flash; do for bb in 1 2; do
  MOEJIT_CACHE_DIR=/tmp/c-st timeout 60 .device/st/bin/moejit run --model $m --batch $bb >> $OUT/s100-run-st.log 2>&1; done; done
grep -hE "PASS|FAIL" $OUT/s100-run-st.log | tail -8
