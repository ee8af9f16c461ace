import re,sys,statistics as st
d={}
for l in open(sys.argv[1]):
    b=l.split()[0]; v=[float(x) for x in re.findall(r'=([0-9.]+)',l)]
    d.setdefault(b,[]).append(v)
for b,rows in d.items():
    cols=list(zip(*rows))
    print(b, ' '.join(f'{st.median(c):.3f}' for c in cols))
