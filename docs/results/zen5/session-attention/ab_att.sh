#!/bin/bash
# usage: ab_att.sh ROUNDS THREADS bin1 bin2 ... ; prints per-binary min over rounds for each BM_AttentionVerify case
R=$1; T=$2; shift 2
for i in $(seq 1 $R); do for b in "$@"; do
  OMP_NUM_THREADS=$T $b --benchmark_filter='BM_AttentionVerify' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep "_min" | awk -v b=$(basename $b) '{print b, $1, $2}'
done; done | sort | awk '{k=$1" "$2; if(!(k in m) || $3<m[k]) m[k]=$3} END{for(k in m) print k, m[k]}' | sort -k2,2 -k1,1
