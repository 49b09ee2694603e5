# Warp-stall samples of an ncu source-page CSV binned by SASS offset: bins.py CSV [BIN_HEX].
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1]))); hdr = rows[1]; ix = {h: i for i, h in enumerate(hdr)}
def num(s):
    try: return float(s.replace(',', ''))
    except: return 0.0
data = [r for r in rows[2:] if len(r) >= len(hdr)]
base = int(data[0][ix['Address']], 16)
total = sum(num(r[ix['Warp Stall Sampling (All Samples)']]) for r in data)
binsz = int(sys.argv[2], 16) if len(sys.argv) > 2 else 0x800
b = collections.OrderedDict()
for r in data:
    a = int(r[ix['Address']], 16) - base
    k = a // binsz
    e = b.setdefault(k, [0, 0, collections.Counter(), 0])
    e[0] += num(r[ix['Warp Stall Sampling (All Samples)']]); e[1] = max(e[1], num(r[ix['Instructions Executed']]))
    src = r[ix['Source']].split()
    op = src[1] if src and src[0].startswith('@') else (src[0] if src else '')
    if op.startswith(('QGMMA', 'HGMMA', 'SYNCS', 'BAR', 'STG', 'RED', 'ATOM', 'UTMALDG', 'LDGSTS', 'FFMA', 'NANOSLEEP', 'LDG', 'STS')): e[2][op.split('.')[0]] += 1
    e[3] += 1
for k, (s, mx, ops, n) in b.items():
    if s / total < 0.004: continue
    print(f"+{k*binsz:06x} {100*s/total:5.1f}% maxexec={mx:7.0f} n={n:4d} " + " ".join(f"{o}:{c}" for o, c in ops.most_common(6)))
