#!/usr/bin/env bash
# s30 (<= ~260 s): residency shares by blockIdx slot (.device/res, exact path: stream shares 100/96/81 by the
# slot blockIdx.x / (G/3) a CTA holds on its SM) checked,
# then measured against 75c91f4 (.device/old) in one lease: old / res / base / res / old, every model and B of
# the exact path (base = .device/bin, main 31b349e, even shares: DSV4.1-Flash only).
set -uo pipefail
export MOEJIT_CACHE_DIR=/tmp/moejit-cache
R=$PWD/.device/res/bin B=$PWD/.device/bin O=$PWD/.device/old/moejit_bench_moe
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); C=$(cat .device/res/COMMIT); CB=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
r() { local n=$1 c=$2 t=$3; shift 3; [ $SECONDS -gt ${S30_DEADLINE:-230} ] && { echo "$n skipped at ${SECONDS}s"; return; }
  { hdr "$c" "$@"; timeout $t "$@"; echo "rc $?"; } > $OUT/s30-$n.log 2>&1; echo "$n at ${SECONDS}s: $(tail -1 $OUT/s30-$n.log)"; }
echo "device: $D"
{
for a in "--model dsv4.1-flash --batch 2 --path exact" "--model dsv4.1-flash --batch 64 --path exact" \
         "--model glm5.2 --batch 4 --path exact --shared-expert" "--model dsv4.1-flash --batch 8 --recipe w4a16"; do
  hdr "$C" moejit run $a; timeout 60 $R/moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
done
} > $OUT/s30-0-run.log 2>&1
echo "res checks at ${SECONDS}s: $(grep -c 'result: PASS' $OUT/s30-0-run.log) PASS, $(grep -c -E 'FAIL|rc [1-9]' $OUT/s30-0-run.log) FAIL"
r 0-gpu "$C" 120 $R/moejit_gpu_tests -tc="DSV4.1-Flash matrix,residency shares*,a traced forward*"
if grep -q "rc 139" $OUT/s30-0-gpu.log && command -v gdb >/dev/null; then  # where a crash was (s29's was unexplained)
  timeout 90 gdb -q -batch -ex run -ex bt --args $R/moejit_gpu_tests -tc="residency shares*,a traced forward*" > $OUT/s30-0-gdb.log 2>&1
fi
r 1-old 75c91f4 60 $O
r 2-res "$C" 60 $R/moejit_bench_moe --path exact --model glm5.2
r 3-res "$C" 60 $R/moejit_bench_moe --path exact --model dsv4.1-flash
r 4-base "$CB" 40 $B/moejit_bench_moe --path exact --model dsv4.1-flash --batches 1,2,4,8,64
r 5-res "$C" 60 $R/moejit_bench_moe --path exact --model dsv4.1-flash
r 6-res "$C" 60 $R/moejit_bench_moe --path exact --model glm5.2
r 7-old 75c91f4 60 $O
mkdir -p $OUT/csv  # every CTA's milestones (thirds by blockIdx: slots.py)
r 8-trace "$C" 40 $R/moejit_bench_moe --path exact --model dsv4.1-flash --batches 2,4 --trace-csv $OUT/csv
cd $OUT && for f in s30-[1-8]-*.log; do echo "== $f"; grep -E '^(glm5.2|dsv4.1-flash) ' $f | awk '{print $1, $2, $6}' | paste -sd' '; done
tar czf s30-logs.tgz s30-*.log csv && rm -r s30-*.log csv
