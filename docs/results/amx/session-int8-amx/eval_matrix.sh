#!/bin/bash
# eval_speed.sh over binaries x option sets x temperatures, A B B A per cell, so each
# comparison runs side by side; one file per run in OUT_DIR.
#   eval_matrix.sh BEFORE AFTER OUT_DIR LIMIT   (repository root)
A=$1; B=$2; OUT=$3; LIMIT=$4; mkdir -p "$OUT"
here=$(dirname "$0")
for temp in 0 1; do
  for opts in "" "--quantization int8"; do
    tag=$(echo "T${temp} ${opts:-default}" | tr -c 'a-zA-Z0-9\n' '_')
    for arm in before_1 after_1 after_2 before_2; do
      case $arm in before*) bin=$A;; *) bin=$B;; esac
      # shellcheck disable=SC2086
      bash "$here/eval_speed.sh" "$bin" "$OUT/${tag}_${arm}.txt" "$LIMIT" "$temp" $opts
    done
  done
  for opts in "--isa vnni" "--isa vnni --quantization int8" "--isa avx2" "--isa avx2 --quantization int8"; do
    tag=$(echo "T${temp} ${opts}" | tr -c 'a-zA-Z0-9\n' '_')
    # shellcheck disable=SC2086
    bash "$here/eval_speed.sh" "$B" "$OUT/${tag}_after_1.txt" "$LIMIT" "$temp" $opts
  done
done
