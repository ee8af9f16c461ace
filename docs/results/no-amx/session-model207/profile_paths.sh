# profile_paths.sh DSPARK ROUNDS [DSPARK ARGS...]: `dspark profile --reprofile` of tiny-target, bf16 and
# int8 weights, on the CPU's best path (no --isa) and forced to --isa avx2, in the order
# best avx2 avx2 best per round (extra arguments go to every run); prints "config ms(1) ms(9) ratio".
BIN=$1; N=${2:-3}; shift $(($# < 2 ? $# : 2)); EXTRA=("$@")
run() {  # run LABEL ARGS...
  local label=$1; shift
  $BIN profile --model models/tiny-target --reprofile "$@" "${EXTRA[@]}" 2>&1 |
    awk -v l="$label" '$1=="1"{t1=$3} $1=="9"{t9=$3} END{printf "%s %s %s %.3f\n", l, t1, t9, t9/t1}'
}
for i in $(seq $N); do
  for isa in best avx2 avx2 best; do
    args=(); [[ $isa == avx2 ]] && args=(--isa avx2)
    run "bf16_$isa" "${args[@]}"
    run "int8_$isa" "${args[@]}" --quantization int8
  done
done
