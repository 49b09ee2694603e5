import csv,sys,collections
def load(f):
    rows=list(csv.reader(open(f)))
    h=rows[1]; data=rows[2:]
    return h,data
for f in sys.argv[1:]:
    h,data=load(f)
    ix={n:i for i,n in enumerate(h)}
    stall_cols=[n for n in h if n.startswith('stall_') and 'Not Issued' not in n]
    tot=collections.Counter(); total=0; per=[]
    for r in data:
        try: s=int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
        except: continue
        total+=s
        for c in stall_cols:
            v=r[ix[c]]
            if v: tot[c]+=int(float(v))
        per.append((s,r[ix['Address']],r[ix['Source']][:90],{c:int(float(r[ix[c]])) for c in stall_cols if r[ix[c]] and float(r[ix[c]])>0}))
    print('==',f,'total samples',total)
    print('  ',', '.join(f'{k[6:]}={v*100/total:.1f}%' for k,v in tot.most_common(8)))
    per.sort(reverse=True)
    for s,a,src,d in per[:25]:
        top=sorted(d.items(),key=lambda x:-x[1])[:3]
        print(f'  {s*100/total:5.2f}% {a} {src:90s} {" ".join(f"{k[6:]}={v}" for k,v in top)}')
