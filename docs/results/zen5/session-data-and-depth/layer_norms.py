# RMS of each decoder layer's output projections in a drafter checkpoint (f32 or bf16 safetensors).
import json, struct, sys, array, math
path = sys.argv[1]
with open(path, 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]
    header = json.loads(f.read(n)); base = 8 + n
    for name in sorted(header):
        if name == '__metadata__' or not any(k in name for k in ('o_proj', 'down_proj')): continue
        h = header[name]; a, b = h['data_offsets']; f.seek(base + a); raw = f.read(b - a)
        if h['dtype'] == 'F32': v = array.array('f', raw)
        elif h['dtype'] == 'BF16':
            u = array.array('H', raw); v = array.array('f', struct.pack(f'<{len(u)}I', *[x << 16 for x in u]))
        else: continue
        print(f"{name:45s} {h['shape']} rms {math.sqrt(sum(x*x for x in v)/len(v)):.5f}")
