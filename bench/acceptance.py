"""Issue 11's acceptance 1 and 2 read off `moejit_bench_moe` logs: the bar at each point, and how far short.

On the GPU machine the logs are what the lease scripts write (each run headed by `# date: ... commit: ...
device: ...`, then the bench's own table). Anywhere (no GPU, the standard library only):
  python3 bench/acceptance.py fast RUN1.log RUN2.log          # acceptance 1: >= 85% of the floor at B >= 8,
                                                               # >= 75% at B = 1-4, in every run given
  python3 bench/acceptance.py exact --old OLD.log EXACT.log    # acceptance 2: no point more than 2% slower
                                                               # than the old bench (same lease; each median
                                                               # over its run's floor)
Each prints a markdown table (one row a model and B) and exits 1 where a point misses, 0 where none does; it
says which device and commits the logs name, and exits 2 if they name anything but an H200 (the acceptance's
card) unless --any-device is given. --json prints the rows as one object instead.
"""
import argparse
import json
import re
import sys

HEADER = re.compile(r"^# date: (\S+)\s+commit: (\S+)\s+device: (.+?)\s*$")
BAR_SMALL, BAR_LARGE, LARGE_FROM, SLOWER_LIMIT = 75.0, 85.0, 8, 1.02


class Point:
    """One row of a bench table: a model at B, with the run's header."""

    def __init__(self, model, batch, floor_us, median_us, percent, commit, device):
        self.model, self.batch = model, batch
        self.floor_us, self.median_us, self.percent = floor_us, median_us, percent
        self.commit, self.device = commit, device


def read_log(path):
    """The bench rows of one log, in order. Columns are found by the table's own header row ("model B ..."),
    so an old bench's table (fewer columns) reads the same."""
    points, commit, device, columns = [], "unknown", "unknown", None
    with open(path) as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                commit, device = m.group(2), m.group(3)
                continue
            words = line.split()
            if len(words) >= 6 and words[0] == "model" and words[1] == "B":
                columns = {name: i for i, name in enumerate(words)}
                continue
            if columns is None or len(words) < len(columns) or not words[1].isdigit():
                continue
            try:
                percent = float(words[columns["%floor"]].rstrip("%"))
                points.append(Point(words[0], int(words[1]), float(words[columns["floor_us"]]),
                                    float(words[columns["median_us"]]), percent, commit, device))
            except (KeyError, ValueError):
                continue  # a line that only looks like a row
    if not points:
        raise ValueError(f"{path}: no moejit_bench_moe rows (a '# date: ... commit: ... device: ...' header, "
                         "the 'model B ...' header row, then one row a model and B)")
    return points


def by_point(points):
    out = {}
    for p in points:
        out.setdefault((p.model, p.batch), []).append(p)
    return out


def bar(batch):
    return BAR_LARGE if batch >= LARGE_FROM else BAR_SMALL


def fast_rows(runs):
    """Acceptance 1: a point meets the bar when every run's %floor does; `short` is the worst run's gap."""
    tables = [by_point(r) for r in runs]
    keys = sorted(set().union(*tables), key=lambda k: (k[0], k[1]))
    rows = []
    for key in keys:
        values = [p.percent for t in tables for p in t.get(key, [])]
        worst = min(values)
        rows.append({"model": key[0], "B": key[1], "percent": values, "bar": bar(key[1]),
                     "short": round(max(0.0, bar(key[1]) - worst), 1), "met": worst >= bar(key[1]),
                     "runs": len(values)})
    return rows


def exact_rows(old, exact):
    """Acceptance 2: the exact path's time over the old bench's, each run's median over its own floor (rotated
    inputs route to a different number of experts in each run: at DSV4.1-Flash B = 2, 11.8 or 12.0), by the
    means where a point ran more than once; a point misses where the exact path is more than 2% slower."""
    o, e = by_point(old), by_point(exact)
    per_floor = lambda ps: sum(p.median_us / p.floor_us for p in ps) / len(ps)
    mean_us = lambda ps: sum(p.median_us for p in ps) / len(ps)
    rows = []
    for key in sorted(set(o) & set(e), key=lambda k: (k[0], k[1])):
        ratio = per_floor(e[key]) / per_floor(o[key])
        rows.append({"model": key[0], "B": key[1], "old_us": round(mean_us(o[key]), 1),
                     "exact_us": round(mean_us(e[key]), 1), "ratio": round(ratio, 4), "met": ratio <= SLOWER_LIMIT})
    return rows


def provenance(points):
    devices = sorted({p.device for p in points})
    commits = sorted({p.commit for p in points})
    return devices, commits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["fast", "exact"], help="acceptance 1 (fast) or 2 (exact against --old)")
    ap.add_argument("logs", nargs="+", help="bench logs: each run of the path (fast: two, as the issue asks)")
    ap.add_argument("--old", action="append", default=[], help="exact: the old bench's log(s), same lease")
    ap.add_argument("--any-device", action="store_true", help="read logs of a card other than the H200")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args(argv)
    try:
        runs = [read_log(p) for p in a.logs]
        olds = [read_log(p) for p in a.old]
    except (OSError, ValueError) as err:
        print(f"acceptance.py: {err}", file=sys.stderr)
        return 2
    if a.kind == "exact" and not olds:
        print("acceptance.py: exact needs --old OLD.log (the old bench's run in the same lease)", file=sys.stderr)
        return 2
    everything = [p for r in runs + olds for p in r]
    devices, commits = provenance(everything)
    if not a.any_device and any("H200" not in d for d in devices):
        print(f"acceptance.py: the logs name {', '.join(devices)}; the acceptance is the H200's "
              "(--any-device reads them anyway)", file=sys.stderr)
        return 2
    if a.kind == "fast":
        rows = fast_rows(runs)
    else:
        rows = exact_rows([p for r in olds for p in r], [p for r in runs for p in r])
    missed = [r for r in rows if not r["met"]]
    if a.json:
        print(json.dumps({"kind": a.kind, "devices": devices, "commits": commits, "rows": rows,
                          "missed": len(missed)}, indent=1))
    else:
        print(f"devices: {', '.join(devices)}; commits: {', '.join(commits)}\n")
        if a.kind == "fast":
            print("| model | B | % of floor (each run) | bar | short by |\n|---|---|---|---|---|")
            for r in rows:
                runs_text = " / ".join(f"{v:.1f}" for v in r["percent"])
                print(f"| {r['model']} | {r['B']} | {runs_text} | {r['bar']:.0f} | "
                      f"{'-' if r['met'] else format(r['short'], '.1f')} |")
        else:
            print("| model | B | old median us | exact median us | exact / old (per floor) | within 2% |\n"
                  "|---|---|---|---|---|---|")
            for r in rows:
                print(f"| {r['model']} | {r['B']} | {r['old_us']:.1f} | {r['exact_us']:.1f} | {r['ratio']:.3f} | "
                      f"{'yes' if r['met'] else 'no'} |")
        print(f"\n{len(rows) - len(missed)} of {len(rows)} points meet it")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
