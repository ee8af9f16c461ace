# attention_ab.sh A B ROUNDS: kernels_bench BM_AttentionVerify (warm, bf16 KV), 1 and 2 threads, ISAs vnni and avx2, A B B A
A=$1; B=$2; N=$3
for r in $(seq $N); do for isa in vnni avx2; do for t in 1 2; do for b in $A $B $B $A; do
  DSPARK_ISA=$isa OMP_NUM_THREADS=$t $b --benchmark_filter='BM_AttentionVerify/tokens:(1|9)/len:(128|896)/bf16:1/cold:0' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep '_min' | awk -v b=$b -v t=$t -v i=$isa '{print i, "threads", t, b, $1, $2}'
done; done; done; done
