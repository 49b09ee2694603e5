#!/usr/bin/env python3
"""Per-slot timing of a compute grid from `moejit_bench_moe --trace-csv` files (s28.sh, s29.sh).

usage: slots.py [--slots 3] trace-*.csv ...

For each file: the CTAs grouped into `slots` equal ranges, by blockIdx (the `cta` column) and, where the trace has
it, by the share the CTA took (the `share` column: its arrival rank under residency shares, blockIdx otherwise),
with each group's mean GEMM1-share-done and consumers-done times and the slowest CTA's. Even shares on the exact
atom at 3 CTAs a SM left the last range ~18% behind (bench/results/2026-12-05-h100-s23-landed-and-third-slot.md);
residency shares should leave the ranges level by share.
"""
import argparse
import csv
import statistics


def groups(rows, key, slots):
    n = len(rows)
    out = [[] for _ in range(slots)]
    for r in rows:
        out[min(int(float(r[key])) * slots // n, slots - 1)].append(r)
    return out


def line(label, rows_by_slot):
    cells = []
    for g in rows_by_slot:
        g1 = [float(r["gemm1_share_done_us"]) for r in g if r["gemm1_share_done_us"]]
        cd = [float(r["consumers_done_us"]) for r in g if r["consumers_done_us"]]
        cells.append(f"{statistics.mean(g1):7.1f} {statistics.mean(cd):7.1f} {max(cd):7.1f}" if g1 and cd else "   -")
    print(f"  {label:<9} " + " | ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=3, help="ranges to group the CTAs in (default 3: CTAs per SM)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.slots < 1:
        ap.error(f"--slots {a.slots} is invalid: must be >= 1")
    for f in a.files:
        with open(f, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows:
            print(f"{f}: no CTAs")
            continue
        print(f"{f}: {len(rows)} CTAs; per range: GEMM1 done mean, consumers done mean, max (us)")
        line("blockIdx", groups(rows, "cta", a.slots))
        if "share" in rows[0] and all(r["share"] for r in rows):
            line("share", groups(rows, "share", a.slots))


if __name__ == "__main__":
    main()
