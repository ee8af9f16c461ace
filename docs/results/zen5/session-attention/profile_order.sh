#!/bin/bash
# dspark profile --reprofile, 4 rounds alternating: consecutive (this session's attention, sizes timed
# one after another as shipped) and interleaved (the same attention, 5 interleaved passes; not kept).
cd /work/runs/s36
for i in 1 2 3 4; do for b in dspark_consecutive dspark_interleaved; do
  ./$b profile --model /work/main/models/tiny-target --reprofile --threads 2 2>/dev/null | awk -v b=$b -v i=$i '$1==1||$1==9||$1==16||$1==64 {printf "%s round %d tokens %s ms/step %s\n", b, i, $1, $3}'
done; done
