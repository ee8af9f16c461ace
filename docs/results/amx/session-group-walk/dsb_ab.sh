# dsb_ab.sh A B ROUNDS FILTER: decode_step_bench BM_VerifyOverDecode, A B B A per round
A=$1; B=$2; N=$3; F=$4
for r in $(seq $N); do for b in $A $B $B $A; do
  OMP_NUM_THREADS=2 DSPARK_ISA=vnni $b --benchmark_filter="$F" 2>&1 | grep '^BM_' | awk -v b=$b '{for(i=1;i<=NF;i++) if($i ~ /^t[19]_ms=/ || $i ~ /^t9\/t1=/) x=x" "$i; print b, $1, x; x=""}'
done; done
