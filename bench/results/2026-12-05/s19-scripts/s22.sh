#!/usr/bin/env bash
# s22 (one H200, ~250 s, after s21 in the same call): the two prepared B = 1-4 changes against main in one
# interleaved sweep: .device/fused (the unit schedule finalizes in its compute grid) and .device/early (compute
# triggers its dependents once its CTA is scheduled). Each is checked first (moejit run against the CPU
# reference); a variant that fails is left out of the sweep. Sweep per model: main fused early early fused main
# at B = 1, 2, 4. S22_DEADLINE: seconds of this script after which no further bench starts.
set -uo pipefail
export PATH=$PWD/.device/bin:$PATH MOEJIT_CACHE_DIR=/tmp/moejit-cache
DL=${S22_DEADLINE:-300}
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
C=$(cat .device/COMMIT)
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
ok=()
for v in fused early; do
  [ -d .device/$v ] || { echo "$v: no .device/$v, left out"; continue; }
  V=$PWD/.device/$v; VC=$(paste -sd' ' $V/COMMIT)
  {
  for a in "--model glm5.2 --batch 1" "--model dsv4.1-flash --batch 1" "--model glm5.2 --batch 2" "--model dsv4.1-flash --batch 4"; do
    hdr "$VC" $v/moejit run $a; timeout 60 $V/moejit run $a 2>&1 | tail -3; echo "rc ${PIPESTATUS[0]}"
  done
  } > $OUT/s22-$v-run.log 2>&1
  p=$(grep -c PASS $OUT/s22-$v-run.log); f=$(grep -c -E "FAIL|rc [1-9]" $OUT/s22-$v-run.log)
  echo "$v checks at ${SECONDS}s: $p PASS, $f FAIL"
  [ "$f" = 0 ] && [ "$p" -ge 4 ] && ok+=($v)
done
for m in glm5.2 dsv4.1-flash; do
  order=(main); for v in "${ok[@]}"; do order+=($v); done
  rev=(); for ((i=${#order[@]}-1; i>=0; i--)); do rev+=(${order[i]}); done
  for b in "${order[@]}" "${rev[@]}"; do
    [ $SECONDS -gt $DL ] && break
    bin=moejit_bench_moe; cm=$C; [ $b != main ] && bin=$PWD/.device/$b/moejit_bench_moe cm=$(paste -sd' ' .device/$b/COMMIT)
    { hdr "$cm" "$b:" moejit_bench_moe --model $m --batches 1,2,4; timeout 45 $bin --model $m --batches 1,2,4; } >> $OUT/s22-abba.log 2>&1
  done
done
echo "abba at ${SECONDS}s"; grep -E "^# command|^(glm|dsv)" $OUT/s22-abba.log
