# Warp-stall samples of an ncu source-page CSV (ncu -i REPORT --page source --print-source sass --csv),
# by SASS offset from the kernel's first instruction:
#   stalls.py CSV bins [BIN_HEX]     the samples per bin (default 0x800) with the bin's notable opcodes
#   stalls.py CSV range LO-HI ...    per hex range: its share, the stall reasons, its top instructions
import collections
import csv
import sys


def num(s):
    try:
        return float(s.replace(',', ''))
    except ValueError:
        return 0.0


rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
data = [r for r in rows[2:] if len(r) >= len(hdr)]
base = int(data[0][ix['Address']], 16)
total = sum(num(r[ix['Warp Stall Sampling (All Samples)']]) for r in data)
stalls = [h for h in hdr if h.startswith('stall_') and '(Not' not in h]


def offset(r):
    return int(r[ix['Address']], 16) - base


def samples(r):
    return num(r[ix['Warp Stall Sampling (All Samples)']])


if sys.argv[2] == 'bins':
    size = int(sys.argv[3], 16) if len(sys.argv) > 3 else 0x800
    bins = collections.OrderedDict()
    for r in data:
        e = bins.setdefault(offset(r) // size, [0, 0, collections.Counter(), 0])
        e[0] += samples(r)
        e[1] = max(e[1], num(r[ix['Instructions Executed']]))
        src = r[ix['Source']].split()
        op = src[1] if src and src[0].startswith('@') else (src[0] if src else '')
        if op.startswith(('QGMMA', 'HGMMA', 'SYNCS', 'BAR', 'STG', 'RED', 'ATOM', 'UTMALDG', 'LDGSTS', 'FFMA',
                          'NANOSLEEP', 'LDG', 'STS')):
            e[2][op.split('.')[0]] += 1
        e[3] += 1
    for k, (s, most, ops, n) in bins.items():
        if s / total >= 0.004:
            print(f"+{k * size:06x} {100 * s / total:5.1f}% maxexec={most:7.0f} n={n:4d} " +
                  " ".join(f"{o}:{c}" for o, c in ops.most_common(6)))
else:
    for spec in sys.argv[3:]:
        lo, hi = (int(x, 16) for x in spec.split('-'))
        mine = [r for r in data if lo <= offset(r) < hi]
        reasons = collections.Counter({h: sum(num(r[ix[h]]) for r in mine) for h in stalls})
        execs = collections.Counter(num(r[ix['Instructions Executed']]) for r in mine)
        print(f"{spec}: {100 * sum(map(samples, mine)) / total:.1f}% of samples; instructions by exec count: "
              f"{dict(execs.most_common(4))}")
        print("   " + " ".join(f"{k[6:]}={100 * v / total:.1f}" for k, v in reasons.most_common(8)))
        for r in sorted(mine, key=samples, reverse=True)[:8]:
            print(f"     {100 * samples(r) / total:4.1f}% {r[ix['Source']][:70]} "
                  f"exec={num(r[ix['Instructions Executed']]):.0f}")
