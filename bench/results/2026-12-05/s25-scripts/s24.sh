#!/usr/bin/env bash
# s24 (one call, <= 10 min, H200 or H100): .device/bin = main + bench/results/2026-12-05/s23-exact-path-no-scale-
# records.patch ("cand": DSV4.1-Flash's exact and W4A16 plans get 8 stages, 7 on main, 8 at 75c91f4).
# (1) cand checked: `moejit run` on the changed plans and an unchanged one; the GPU cases of DSV4.1-Flash (both
# paths), W4A16, and the two StreamCase cases (5a2cf4c). (2) issue 11's acceptance 1 and 2 in one lease:
# 75c91f4's bench (.device/old) and cand's, old / exact / fast / exact / old / fast, both models, every B.
# S24_SHORT=1 (a lease of ~250 s): the GPU cases of this stop only, and no bench started after 200 s.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
C=$(cat .device/COMMIT); O=$PWD/.device/old/moejit_bench_moe
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
echo "device: $D"
{
for a in "--model dsv4.1-flash --batch 1 --path exact" "--model dsv4.1-flash --batch 2 --path exact" \
         "--model dsv4.1-flash --batch 64 --path exact" "--model dsv4.1-flash --batch 8 --recipe w4a16" \
         "--model dsv4.1-flash --batch 4 --path exact --shared-expert" "--model glm5.2 --batch 2 --path exact"; do
  hdr "$C" moejit run $a; timeout 60 moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s24-0-run.log 2>&1
p=$(grep -c "result: PASS" $OUT/s24-0-run.log); f=$(grep -c -E "FAIL|rc [1-9]" $OUT/s24-0-run.log)
echo "cand checks at ${SECONDS}s: $p PASS, $f FAIL"
T="a layer refuses a GPU*,a forward from a thread*,a graph captured on a stream the layer released*"
if [ "${S24_SHORT:-0}" = 1 ]; then LIMIT=90 DEADLINE=${S24_DEADLINE:-200}
else T="DSV4.1-Flash matrix,W4A16 recipe*,$T" LIMIT=200 DEADLINE=${S24_DEADLINE:-530}; fi
( hdr "$C" moejit_gpu_tests -tc="$T"; timeout $LIMIT moejit_gpu_tests -tc="$T"; echo "rc $?" ) > $OUT/s24-0-gpu.log 2>&1
echo "cand gpu at ${SECONDS}s: $(tail -1 $OUT/s24-0-gpu.log) $(grep 'test cases:' $OUT/s24-0-gpu.log)"
i=0
for r in old exact fast exact old fast; do
  i=$((i + 1)); [ $SECONDS -gt $DEADLINE ] && break
  case $r in
    old) { hdr 75c91f4 old/moejit_bench_moe; timeout 120 $O; echo "rc $?"; } > $OUT/s24-$i-old.log 2>&1 ;;
    *) { hdr "$C" moejit_bench_moe --path $r; timeout 120 moejit_bench_moe --path $r; echo "rc $?"; } > $OUT/s24-$i-$r.log 2>&1 ;;
  esac
  echo "$i $r at ${SECONDS}s: $(tail -1 $OUT/s24-$i-*.log) $(grep -E '^dsv4.1-flash +(1|2|4) ' $OUT/s24-$i-$r.log | awk '{print $2": "$6}' | paste -sd' ')"
done
cd $OUT && tar czf s24-logs.tgz s24-*.log && rm s24-*.log
