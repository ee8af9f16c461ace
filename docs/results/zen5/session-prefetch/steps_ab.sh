#!/bin/bash
# usage: ab3.sh ROUNDS FILTER bin...   (order rotated each round)
R=$1; F=$2; shift 2; bins=("$@")
for r in $(seq 1 $R); do
  n=${#bins[@]}; 
  for i in $(seq 0 $((n-1))); do b=${bins[$(( (i + r) % n ))]}
    echo "$r $(basename $b) $($b --benchmark_filter="$F" 2>&1 | grep BM_ | grep -o 'path:[0-9]*/history:[0-9]*\|t1_ms=[0-9.]*\|t9_ms=[0-9.]*' | tr '\n' ' ')"
  done
done
