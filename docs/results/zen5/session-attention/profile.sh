#!/bin/bash
# dspark profile --reprofile, 6 rounds alternating: base (sizes timed one after another, 5
# times each) and interleaved (5 interleaved passes over the sizes; not kept); rows 1, 9, 16, 64 of each table.
cd /work/runs/s36
for i in 1 2 3 4 5 6; do for b in dspark_base dspark_interleaved; do
  ./$b profile --model /work/main/models/tiny-target --reprofile --threads 2 2>/dev/null | awk -v b=$b -v i=$i '$1==1||$1==9||$1==16||$1==64 {printf "%s round %d tokens %s ms/step %s\n", b, i, $1, $3}'
done; done
