#!/usr/bin/env bash
# s77: on an H200 (~370 s): acceptance 1 (main's defaults, both models, twice) and 2 (the exact path, and
# 75c91f4's bench, same lease), the token frame's A/B at B = 16-256 and at B = 1-8, the K-loop probe; then, if
# time is left, main against db31458 (before the frame dispatch read each block once) at B = 16-256.
# On another card (~200 s): main against db31458 on 80 SMs (the H200's bytes a clock per SM), rounds
# db31458, main, main, db31458.
set -uo pipefail
D=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $D"; C=$(cat .device/COMMIT); N=$PWD/.device/bin; O=$PWD/.device/old; P=$PWD/.device/prev; V=$PWD/.device/var
hdr() { echo "# date: $(date -u +%FT%TZ)  commit: $1  device: $D"; shift; echo "# command: $*"; }
b() {  # log bin commit args...
  local log=$1 bin=$2 c=$3; shift 3
  { for m in glm5.2 dsv4.1-flash; do hdr $c moejit_bench_moe --model $m "$@"
      MOEJIT_CACHE_DIR=/tmp/c-$c timeout 150 $bin/moejit_bench_moe --model $m "$@"; done; } > $OUT/s77-$log.log 2>&1
  echo "$log done at ${SECONDS}s"; grep -E "^(glm|dsv)" $OUT/s77-$log.log | awk '{print $1,$2,$6,$NF}'
}
trace_ab() {  # the unit schedule's prefetch at entry: trace at B = 1, rounds main, var, var, main
  for r in main-1 var-1 var-2 main-2; do
    case $r in main*) bin=$N c=$C;; *) bin=$V c=$(cat $V/COMMIT);; esac
    b trace-$r $bin $c --batches 1,2 --trace; done
  grep -h -E "^(glm|dsv)|first weight copy|^\s+exit" $OUT/s77-trace-*.log | head -80
}
case $D in
  *H200*)
    b fast-1 $N $C
    b frame-off-on $N $C --batches 16,32,64,128,256 --token-frame off,on
    b old $O 75c91f4
    b exact $N $C --path exact
    b fast-2 $N $C
    b frame-small $N $C --batches 1,2,4,8 --token-frame off,on
    trace_ab
    { hdr $C moejit_kloop_probe; $N/moejit_kloop_probe; } > $OUT/s77-probe.log 2>&1
    if (( SECONDS < 440 )) && [ -x $P/moejit_bench_moe ]; then b prev-1 $P db31458 --batches 16,32,64,128,256; b main-3 $N $C --batches 16,32,64,128,256; fi
    ;;
  *)
    # memcheck of main's kernels (the frame dispatch of 4b55946 on both inputs, the exact path, the unit schedule),
    # the SM-partition cases the matrix of s76 left out, and the token frame at B = 1-8 on 80 SMs, two rounds.
    export MOEJIT_CACHE_DIR=/tmp/c78
    for a in "glm5.2 16" "glm5.2 16 --input-bf16" "dsv4.1-flash 64 --input-bf16" "glm5.2 8 --path exact" "dsv4.1-flash 1 --input-bf16"; do
      set -- $a; m=$1 bb=$2; shift 2; l=$OUT/s78-memcheck-$m-$bb${1:+-${1#--}}${2:+-$2}.log
      { hdr $C compute-sanitizer --tool memcheck --error-exitcode 1 moejit run --model $m --batch $bb "$@"
        timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 $N/moejit run --model $m --batch $bb "$@"; echo "rc=$?"; } > $l 2>&1
      echo "$(basename $l): $(grep -E "ERROR SUMMARY|rc=" $l | tr '\n' ' ') at ${SECONDS}s"
    done
    { hdr $C moejit_gpu_tests -tc='expert parallelism*,SM partitions*,two layers planned*'
      timeout 200 $N/moejit_gpu_tests --duration=true -tc="expert parallelism*,SM partitions*,two layers planned*"; echo "rc=$?"; } > $OUT/s78-partitions.log 2>&1
    tail -3 $OUT/s78-partitions.log
    trace_ab
    b frame-small-80-1 $N $C --sm-count 80 --batches 1,2,4,8 --token-frame off,on
    b frame-small-80-2 $N $C --sm-count 80 --batches 1,2,4,8 --token-frame on,off
    ;;
esac
cd $OUT && tar czf s77-logs.tgz s7[78]-*.log && rm -f s7[78]-*.log; ls
