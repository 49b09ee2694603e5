"""Where a kernel's time goes, per SASS line, from Nsight Compute's source page.

Take a report with the source view and export its SASS page as CSV (on the GPU machine):
  ncu --clock-control none --set full --import-source yes -k regex:compute --launch-skip 12 --launch-count 1 \\
      -o rep moejit_bench_moe --model glm5.2 --batches 256
  ncu -i rep.ncu-rep --page source --csv --print-source sass > rep-sass.csv
then, anywhere (no GPU, the standard library only):
  python3 bench/ncu_sass.py stalls rep-sass.csv [--top 25]   # warp stall samples: by reason, then the top lines
  python3 bench/ncu_sass.py mix rep-sass.csv [--top 25]      # executed instructions by opcode (FFMA, LOP3, ...)
  python3 bench/ncu_sass.py sectors rep-sass.csv [--top 12]  # L2 sectors of global loads and stores, by line
Several CSVs print one after another, each headed by its name; --json prints one object per file instead.
(bench/results/2026-12-06-h100-partial-granules.md and -granules-acceptance-rerun.md read their reports so.)
"""
import argparse
import collections
import csv
import json
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
SECTORS = "L2 Theoretical Sectors Global"
EXCESSIVE = "L2 Theoretical Sectors Global Excessive"


class SassPage:
    """The rows of one SASS page: the header is the first row that names "Address" and "Source"."""

    def __init__(self, path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        for i, row in enumerate(rows):
            if "Address" in row and "Source" in row:
                self.header, self.rows = row, rows[i + 1 :]
                break
        else:
            raise ValueError(f"{path}: no header row naming Address and Source (not a SASS page export)")
        self.col = {name: k for k, name in enumerate(self.header)}
        self.path = path

    def need(self, *names):
        missing = [n for n in names if n not in self.col]
        if missing:
            raise ValueError(f"{self.path}: no column {', '.join(repr(n) for n in missing)} "
                             "(export the page of a report taken with --set full --import-source yes)")

    def number(self, row, name):
        k = self.col[name]
        try:
            return float(row[k]) if k < len(row) and row[k] else 0.0
        except ValueError:
            return 0.0

    def source(self, row):
        return row[self.col["Source"]].strip()

    def stall_reasons(self):
        return [n for n in self.header if n.startswith("stall_") and "(Not Issued)" not in n]


def opcode(source):
    """The mnemonic of a SASS line without its predicate or modifiers: "@!P0 LOP3.LUT R1, ..." -> "LOP3"."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].rstrip(";").split(".")[0] if words else "?"


def stalls(page, top):
    page.need(SAMPLES)
    reasons = page.stall_reasons()
    total, by_reason, lines = 0.0, collections.Counter(), []
    for row in page.rows:
        n = page.number(row, SAMPLES)
        if n <= 0:
            continue
        total += n
        mine = {r[len("stall_"):]: v for r in reasons if (v := page.number(row, r)) > 0}
        by_reason.update(mine)
        lines.append((n, row[page.col["Address"]], page.source(row), mine))
    lines.sort(key=lambda x: -x[0])
    share = lambda v: round(100.0 * v / total, 2) if total else 0.0
    return {
        "samples": total,
        "by_reason_pct": {r: share(v) for r, v in by_reason.most_common()},
        "top_lines": [{"pct": share(n), "address": a, "source": s,
                       "reasons": dict(sorted(m.items(), key=lambda x: -x[1])[:3])} for n, a, s, m in lines[:top]],
    }


def mix(page, top):
    page.need(EXECUTED)
    counts, total = collections.Counter(), 0.0
    for row in page.rows:
        n = page.number(row, EXECUTED)
        if n > 0:
            counts[opcode(page.source(row))] += n
            total += n
    return {"executed": total,
            "by_opcode_pct": {op: round(100.0 * n / total, 2) for op, n in counts.most_common(top)} if total else {}}


def sectors(page, top):
    page.need(SECTORS, EXCESSIVE)
    lines = [(page.number(r, SECTORS), page.number(r, EXCESSIVE), r[page.col["Address"]], page.source(r),
              page.number(r, EXECUTED) if EXECUTED in page.col else 0.0) for r in page.rows]
    lines = sorted((x for x in lines if x[0] > 0), key=lambda x: -x[0])
    return {"sectors": sum(x[0] for x in lines), "excessive": sum(x[1] for x in lines),
            "top_lines": [{"sectors": s, "excessive": e, "address": a, "source": src, "executed": n}
                          for s, e, a, src, n in lines[:top]]}


def show(kind, name, r):
    print(f"== {name}")
    if kind == "stalls":
        print(f"  {r['samples']:.0f} samples: " + ", ".join(f"{k} {v}%" for k, v in list(r["by_reason_pct"].items())[:8]))
        for l in r["top_lines"]:
            why = " ".join(f"{k}={v:.0f}" for k, v in l["reasons"].items())
            print(f"  {l['pct']:6.2f}%  {l['address']}  {l['source'][:80]:80s}  {why}")
    elif kind == "mix":
        print(f"  {r['executed']:.0f} warp instructions: " + ", ".join(f"{k} {v}%" for k, v in r["by_opcode_pct"].items()))
    else:
        print(f"  {r['sectors']:.0f} sectors, {r['excessive']:.0f} excessive")
        for l in r["top_lines"]:
            print(f"  {l['sectors']:10.0f} {l['excessive']:9.0f}  {l['address']}  {l['source'][:70]:70s}  x{l['executed']:.0f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("view", choices=["stalls", "mix", "sectors"], help="what to read of the page")
    ap.add_argument("csv", nargs="+", help="SASS pages: ncu -i REP --page source --csv --print-source sass")
    ap.add_argument("--top", type=int, default=None, help="lines (or opcodes) to list: 25 (stalls, mix), 12 (sectors)")
    ap.add_argument("--json", action="store_true", help="one JSON object per file, keyed by its path")
    a = ap.parse_args(argv)
    top = a.top if a.top is not None else (12 if a.view == "sectors" else 25)
    if top < 1:
        ap.error(f"--top {top}: must be at least 1")
    view = {"stalls": stalls, "mix": mix, "sectors": sectors}[a.view]
    out = {}
    try:
        for path in a.csv:
            out[path] = view(SassPage(path), top)
    except (OSError, ValueError) as e:
        print(f"ncu_sass.py: {e}", file=sys.stderr)
        return 1
    if a.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        for path, r in out.items():
            show(a.view, path, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
