#!/bin/bash
# decode_step_bench's one- and 9-token steps (every path this CPU has), OLD and NEW builds
# alternating, the order swapped every round; 2 threads.
#   steps_ab.sh ROUNDS OLD_BENCH NEW_BENCH > OUT
rounds=$1; old=$2; new=$3
for i in $(seq "$rounds"); do
  order="old new"; [ $((i % 2)) = 0 ] && order="new old"
  for b in $order; do
    bin=$old; [ "$b" = new ] && bin=$new
    OMP_NUM_THREADS=2 "$bin" --benchmark_filter='BM_Step/path:[0-9]/tokens:(1|9)/' 2>&1 | grep '^BM_' | sed "s/^/round $i build $b /"
  done
done
