#!/usr/bin/env python3
"""Side by side: the metrics of one kernel in two `ncu` text reports (s42's s42-ncu-old.log, s42-ncu-main.log).

usage: ncu_compare.py A.log B.log [--all]

Prints each section's metrics that both reports hold, A's value, B's, and B / A where both are numbers; without
--all only the rows whose ratio is off 1 by more than 3%. A report here is ncu's default text output (one
profiled kernel: `--launch-count 1`); the rows are `Metric Name  Metric Unit  Metric Value` under
`Section: ...` headers.
"""
import re
import sys


def parse(path):
    rows, section = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"\s+Section: (.+?)\s*$", line)
        if m:
            section = m.group(1)
            continue
        if section is None or re.match(r"\s*-+\s", line) or "Metric Name" in line:
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 3 and re.match(r"^-?[\d.,]+$", cells[-1]):
            rows[(section, cells[0], cells[-2])] = cells[-1]
        elif len(cells) == 2 and re.match(r"^-?[\d.,]+$", cells[-1]):
            rows[(section, cells[0], "")] = cells[-1]
    return rows


def number(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2 or any(a not in ("--all",) for a in argv if a.startswith("--")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = parse(args[0]), parse(args[1])
    if not a or not b:
        print(f"ncu_compare: no metric rows in {args[0] if not a else args[1]}", file=sys.stderr)
        return 1
    show_all = "--all" in argv
    section = None
    for key in a:
        if key not in b:
            continue
        x, y = number(a[key]), number(b[key])
        ratio = y / x if x not in (None, 0.0) and y is not None else None
        if not show_all and (ratio is None or abs(ratio - 1) <= 0.03):
            continue
        if key[0] != section:
            section = key[0]
            print(f"\n{section}")
        r = f"{ratio:7.3f}" if ratio is not None else "      -"
        print(f"  {key[1][:52]:52} {key[2][:10]:10} {a[key]:>14} {b[key]:>14} {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
