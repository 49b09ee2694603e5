# Summed warp-stall samples of ncu source-page CSV rows by SASS offset range: range.py CSV LO-HI ... (hex offsets).
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1]))); hdr = rows[1]; ix = {h: i for i, h in enumerate(hdr)}
def num(s):
    try: return float(s.replace(',', ''))
    except: return 0.0
data = [r for r in rows[2:] if len(r) >= len(hdr)]
base = int(data[0][ix['Address']], 16)
total = sum(num(r[ix['Warp Stall Sampling (All Samples)']]) for r in data)
stalls = [h for h in hdr if h.startswith('stall_') and '(Not' not in h]
for spec in sys.argv[2:]:
    lo, hi = (int(x, 16) for x in spec.split('-'))
    c = collections.Counter(); s = 0; n = 0; ex = collections.Counter()
    top = []
    for r in data:
        a = int(r[ix['Address']], 16) - base
        if lo <= a < hi:
            v = num(r[ix['Warp Stall Sampling (All Samples)']]); s += v
            for h in stalls: c[h] += num(r[ix[h]])
            e = num(r[ix['Instructions Executed']]); ex[e] += 1
            top.append((v, r[ix['Source']][:70], e))
    print(f"{spec}: {100*s/total:.1f}% of samples; instructions by exec count: {dict(ex.most_common(4))}")
    print("   " + " ".join(f"{k[6:]}={100*v/total:.1f}" for k, v in c.most_common(8)))
    for v, src, e in sorted(top, reverse=True)[:8]: print(f"     {100*v/total:4.1f}% {src} exec={e:.0f}")
