# τ per eval set (MT-Bench's categories pooled), the macro mean of the eleven domains and the
# pooled "all" row, for `dspark eval` outputs: table.py FILE[+MTBENCH_FILE]...
# MTBENCH_FILE: where MT-Bench's pooled row is, for a FILE printed before eval had that row.
import os, re, sys
def rows(path):
    out, section = {}, None
    for line in open(path):
        parts = line.split()
        if line.startswith('domain'): section = 'd'; continue
        if line.startswith('eval sets of several domains'): section = 'p'; continue
        if not parts: section = None; continue
        if section == 'd' and parts[0] == 'all': out['all'] = float(parts[1])
        elif section in 'dp' if section else False: out[parts[0]] = float(parts[2])
    return out
for arg in sys.argv[1:]:
    path, _, mtbench = arg.partition('+')
    r = rows(path)
    if mtbench: r['mtbench_question'] = rows(mtbench)['mtbench_question']
    domains = [k for k in r if k not in ('all', 'mtbench_question')]
    macro = sum(r[k] for k in domains) / len(domains)
    sets = [r.get(k, float('nan')) for k in ('gsm8k', 'humaneval', 'mbpp', 'mtbench_question')]
    print(f"{os.path.basename(path):28} sets " + ' / '.join(f'{v:.3f}' for v in sets) +
          f" | mean of 4 sets {sum(sets)/4:.3f} | macro 11 {macro:.3f} | pooled {r['all']:.3f}")
