"""Issue 11's acceptance 1 and 2 read off `moejit_bench_moe` logs: the bar at each point, and how far short.

On the GPU machine the logs are what the lease scripts write (each run headed by `# date: ... commit: ...
device: ...`, then the bench's own table). Anywhere (no GPU, the standard library only):
  python3 bench/acceptance.py fast RUN1.log RUN2.log          # acceptance 1: >= 85% of the floor at B >= 8,
                                                               # >= 75% at B = 1-4, in every run (two or more)
  python3 bench/acceptance.py exact --old OLD.log EXACT.log    # acceptance 2: no point more than 2% slower
                                                               # than the old bench (same lease; time per byte)
A log is one run: a model and B may appear once in it (a sweep such as --token-frame off,on is refused). A point
missing from a run, or from either side of the comparison, does not meet the bar; rows of models other than
--models (the acceptance's two shapes) are left out. Each prints a markdown table
(one row a model and B) and exits 1 where a point misses, 0 where none does; it says which device and commits
the logs name, and exits 2 on logs it cannot judge: rows of the wrong path, logs of two cards, or of a card other
than the H200 (the acceptance's) unless --any-device is given. --json prints the rows as one object instead.
"""
import argparse
import json
import re
import sys

HEADER = re.compile(r"^# date: (\S+)\s+commit: (\S+)\s+device: (.+?)\s*$")
BENCH_DEVICE = re.compile(r"^device .*copy bandwidth (\d+(?:\.\d+)?) GB/s")
BENCH_PATH = re.compile(r"\bpath (\w+)")
BAR_SMALL, BAR_LARGE, LARGE_FROM, SLOWER_LIMIT = 75.0, 85.0, 8, 1.02


class Point:
    """One row of a bench table: a model at B, with its run's header, path and copy bandwidth (GB/s)."""

    def __init__(self, model, batch, floor_us, median_us, percent, commit, device, path, bandwidth):
        self.model, self.batch = model, batch
        self.floor_us, self.median_us, self.percent = floor_us, median_us, percent
        self.commit, self.device, self.path, self.bandwidth = commit, device, path, bandwidth

    def us_per_byte(self):
        """The median over the bytes the run touched (floor_us x bandwidth, up to a constant): rotated inputs
        route each run to its own number of experts, and each run measures its own copy bandwidth."""
        return self.median_us / (self.floor_us * self.bandwidth)


def read_log(path):
    """The bench rows of one log, in order. Columns are found by the table's own header row ("model B ..."),
    so an old bench's table (fewer columns, no path: its only path was the exact one) reads the same."""
    points, seen = [], set()
    commit, device, columns, bench_path, bandwidth = "unknown", "unknown", None, None, None
    with open(path) as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                commit, device, columns, bench_path, bandwidth = m.group(2), m.group(3), None, None, None
                continue
            m = BENCH_DEVICE.match(line)
            if m:
                bandwidth = float(m.group(1))
                p = BENCH_PATH.search(line)
                bench_path = p.group(1) if p else None
                continue
            words = line.split()
            if len(words) >= 6 and words[0] == "model" and words[1] == "B":
                columns = {name: i for i, name in enumerate(words)}
                continue
            if columns is None or bandwidth is None or len(words) < len(columns) or not words[1].isdigit():
                continue
            try:
                percent = float(words[columns["%floor"]].rstrip("%"))
                point = Point(words[0], int(words[1]), float(words[columns["floor_us"]]),
                              float(words[columns["median_us"]]), percent, commit, device, bench_path, bandwidth)
            except (KeyError, ValueError):
                continue  # a line that only looks like a row
            if (point.model, point.batch) in seen:
                raise ValueError(f"{path}: {point.model} B = {point.batch} twice: a log is one run of one layout "
                                 "(split a sweep such as --token-frame off,on into one log a setting)")
            seen.add((point.model, point.batch))
            points.append(point)
    if not points:
        raise ValueError(f"{path}: no moejit_bench_moe rows (a '# date: ... commit: ... device: ...' header, "
                         "the bench's 'device ... copy bandwidth ...' line and 'model B ...' header row, then one "
                         "row a model and B)")
    return points


def by_point(points):
    out = {}
    for p in points:
        out.setdefault((p.model, p.batch), []).append(p)
    return out


def bar(batch):
    return BAR_LARGE if batch >= LARGE_FROM else BAR_SMALL


def fast_rows(runs):
    """Acceptance 1: a point meets the bar when every run has it and every run's %floor does; `short` is the worst
    run's gap; `missing` the runs (1-based) without it."""
    tables = [by_point(r) for r in runs]
    keys = sorted(set().union(*tables), key=lambda k: (k[0], k[1]))
    rows = []
    for key in keys:
        values = [t[key][0].percent if key in t else None for t in tables]
        measured = [v for v in values if v is not None]
        missing = [i + 1 for i, v in enumerate(values) if v is None]
        short = round(max(0.0, bar(key[1]) - min(measured)), 1)
        rows.append({"model": key[0], "B": key[1], "percent": values, "bar": bar(key[1]), "short": short,
                     "missing": missing, "met": not missing and min(measured) >= bar(key[1])})
    return rows


def exact_rows(old, exact):
    """Acceptance 2: the exact path's time per byte over the old bench's, by the means where a point ran more
    than once; a point misses where the exact path is more than 2% slower, or where either side lacks it."""
    o, e = by_point(old), by_point(exact)
    mean = lambda ps, f: sum(f(p) for p in ps) / len(ps)
    rows = []
    for key in sorted(set(o) | set(e), key=lambda k: (k[0], k[1])):
        row = {"model": key[0], "B": key[1], "old_us": None, "exact_us": None, "ratio": None, "met": False,
               "missing": [side for side, t in (("old", o), ("exact", e)) if key not in t]}
        if not row["missing"]:
            ratio = mean(e[key], Point.us_per_byte) / mean(o[key], Point.us_per_byte)
            row.update(old_us=round(mean(o[key], lambda p: p.median_us), 1),
                       exact_us=round(mean(e[key], lambda p: p.median_us), 1), ratio=round(ratio, 4),
                       met=round(ratio, 4) <= SLOWER_LIMIT)
        rows.append(row)
    return rows


def check_inputs(kind, runs, olds, any_device):
    """Why these logs cannot be judged, or None."""
    if kind == "fast" and len(runs) < 2:
        return "fast needs two runs or more (the issue asks for two): one log a run"
    if kind == "exact" and not olds:
        return "exact needs --old OLD.log (the old bench's run in the same lease)"
    want = "fast" if kind == "fast" else "exact"
    for p in (p for r in runs for p in r):
        if p.path != want:
            return f"{kind}: a row of {p.model} B = {p.batch} ran path {p.path or 'unknown (an old bench)'}, not {want}"
    devices = sorted({p.device for r in runs + olds for p in r})
    if len(devices) > 1:
        return f"the logs name {', '.join(devices)}: one card's logs, from one lease"
    if not any_device and "H200" not in devices[0]:
        return f"the logs name {devices[0]}; the acceptance is the H200's (--any-device reads them anyway)"
    return None


def print_table(kind, rows):
    if kind == "fast":
        print("| model | B | % of floor (each run) | bar | short by |\n|---|---|---|---|---|")
        for r in rows:
            runs = " / ".join("-" if v is None else f"{v:.1f}" for v in r["percent"])
            verdict = "-" if r["met"] else format(r["short"], ".1f")
            if r["missing"]:
                verdict = "not in run " + ", ".join(map(str, r["missing"]))
            print(f"| {r['model']} | {r['B']} | {runs} | {r['bar']:.0f} | {verdict} |")
        return
    print("| model | B | old median us | exact median us | exact / old (per byte) | within 2% |\n"
          "|---|---|---|---|---|---|")
    for r in rows:
        if r["missing"]:
            print(f"| {r['model']} | {r['B']} | | | | no: not measured ({', '.join(r['missing'])}) |")
            continue
        print(f"| {r['model']} | {r['B']} | {r['old_us']:.1f} | {r['exact_us']:.1f} | {r['ratio']:.4f} | "
              f"{'yes' if r['met'] else 'no'} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["fast", "exact"], help="acceptance 1 (fast) or 2 (exact against --old)")
    ap.add_argument("logs", nargs="+", help="bench logs of the path, one log a run (fast: two or more)")
    ap.add_argument("--old", action="append", default=[], help="exact: the old bench's log(s), same lease")
    ap.add_argument("--models", default="glm5.2,dsv4.1-flash",
                    help="the models judged, comma-separated (default: the acceptance's two shapes, glm5.2 and "
                         "dsv4.1-flash); rows of others are left out")
    ap.add_argument("--any-device", action="store_true", help="read logs of a card other than the H200")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args(argv)
    try:
        runs = [read_log(p) for p in a.logs]
        olds = [read_log(p) for p in a.old]
    except (OSError, ValueError) as err:
        print(f"acceptance.py: {err}", file=sys.stderr)
        return 2
    models = {m for m in a.models.split(",") if m}
    runs = [[p for p in r if p.model in models] for r in runs]
    olds = [[p for p in r if p.model in models] for r in olds]
    if not all(runs + olds):
        print(f"acceptance.py: a log has no rows of {', '.join(sorted(models))} (--models)", file=sys.stderr)
        return 2
    problem = check_inputs(a.kind, runs, olds, a.any_device)
    if problem:
        print(f"acceptance.py: {problem}", file=sys.stderr)
        return 2
    rows = fast_rows(runs) if a.kind == "fast" else exact_rows([p for r in olds for p in r],
                                                               [p for r in runs for p in r])
    missed = [r for r in rows if not r["met"]]
    devices = sorted({p.device for r in runs + olds for p in r})
    commits = sorted({p.commit for r in runs + olds for p in r})
    if a.json:
        print(json.dumps({"kind": a.kind, "devices": devices, "commits": commits, "rows": rows,
                          "missed": len(missed)}, indent=1))
    else:
        print(f"devices: {', '.join(devices)}; commits: {', '.join(commits)}\n")
        print_table(a.kind, rows)
        print(f"\n{len(rows) - len(missed)} of {len(rows)} points meet it")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
