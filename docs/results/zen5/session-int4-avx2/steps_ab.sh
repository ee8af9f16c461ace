#!/bin/bash
# OLD/NEW: two decode_step_bench builds, alternating, order swapped each round
OLD=${OLD:?old decode_step_bench}; NEW=${NEW:?new decode_step_bench}
for round in 1 2 3 4; do
  if [ $((round % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for which in $order; do
    b=$OLD; [ $which = new ] && b=$NEW
    echo "== round $round $which"
    $b --benchmark_filter='BM_VerifyOverDecode/path:(5|9|10)/history:128/' 2>&1 | grep '^BM_'
  done
done
