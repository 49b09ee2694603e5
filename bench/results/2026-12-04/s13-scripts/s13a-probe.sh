#!/bin/bash
# s13a: the step owners' K-loops alone (bench/kloop_probe.cu rows 28-37) beside the G = 3, T = 2 rows 23-24.
exec > $OUT/s13a-probe.log 2>&1
echo "# date: $(date -u +%FT%TZ)  commit: $(cat .device/COMMIT)+owner-probe  device: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
echo "# command: kloop_probe_owners i, i in 23 24 28..37, two rounds, each under timeout 10"
for round in 1 2; do
  for i in 23 24 28 29 30 31 32 33 34 35 36 37; do
    timeout 10 .device/bin/kloop_probe_owners $i | grep -v "^# [0-9]* SMs" | grep -v "^loop"
  done
done
