# dsb_multi.sh ROUNDS FILTER BIN...: each round runs the bins in order then reversed
N=$1; F=$2; shift 2; BINS=("$@"); REV=()
for ((i=${#BINS[@]}-1;i>=0;i--)); do REV+=("${BINS[i]}"); done
for r in $(seq $N); do for b in "${BINS[@]}" "${REV[@]}"; do
  OMP_NUM_THREADS=2 DSPARK_ISA=vnni $b --benchmark_filter="$F" 2>&1 | grep '^BM_' | awk -v b=$b '{for(i=1;i<=NF;i++) if($i ~ /^t[19]_ms=/) x=x" "$i; print b, $1, x; x=""}'
done; done
