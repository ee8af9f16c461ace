# profile_ab.sh A_DSPARK B_DSPARK ROUNDS [DSPARK ARGS...]: `dspark profile --reprofile` of tiny-target, A B B A
# per round, three configurations (extra arguments, e.g. --context-length 896, go to every run); prints
# "config binary ms(1) ms(9) ratio" per run.
A=$1; B=$2; N=${3:-3}; shift $(($# < 3 ? $# : 3)); EXTRA=("$@")
run() {  # run LABEL BIN ARGS...
  local label=$1 bin=$2; shift 2
  $bin profile --model models/tiny-target --reprofile "$@" "${EXTRA[@]}" 2>&1 |
    awk -v l="$label" -v b="$bin" '$1=="1"{t1=$3} $1=="9"{t9=$3} END{printf "%s %s %s %s %.3f\n", l, b, t1, t9, t9/t1}'
}
for i in $(seq $N); do
  for bin in $A $B $B $A; do
    run amx $bin
    run vnni_bf16 $bin --isa vnni
    run vnni_int8 $bin --isa vnni --quantization int8
  done
done
