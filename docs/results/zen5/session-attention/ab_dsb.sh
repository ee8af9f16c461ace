#!/bin/bash
# usage: ab_dsb.sh ROUNDS FILTER bin1 bin2 ...: BM_VerifyOverDecode rounds alternating binaries;
# prints each binary's per-round t1/t9 medians and the min over rounds
R=$1; F=$2; shift 2
for i in $(seq 1 $R); do for b in "$@"; do
  $b --benchmark_filter="$F" 2>&1 | grep "^BM" | sed 's/t1_ms=//; s/t9_ms=//; s/t9\/t1=//' | awk -v b=$(basename $b) '{print b, $1, $7, $9}'
done; done | tee /tmp/ab_dsb_raw.txt | awk '{k=$1" "$2; if(!(k in a) || $3<a[k]) a[k]=$3; if(!(k in c) || $4<c[k]) c[k]=$4} END{for(k in a) printf "%s min t1 %.3f min t9 %.3f ratio %.2f\n", k, a[k], c[k], c[k]/a[k]}' | sort -k2,2 -k1,1
