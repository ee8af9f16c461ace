# profile_caps.sh DSPARK ROUNDS [DSPARK ARGS...]: `dspark profile --reprofile` of tiny-target with bf16
# weights under the caps --isa vnni (bf16 matmuls on fma512) and --isa avx512fp16 (on fp16), and int8
# weights under --isa vnni, in the order vnni fp16 fp16 vnni per round (extra arguments, e.g.
# --context-length 896, go to every run); prints "config ms(1) ms(9) ratio" per run.
BIN=$1; N=${2:-3}; shift $(($# < 2 ? $# : 2)); EXTRA=("$@")
run() {  # run LABEL ARGS...
  local label=$1; shift
  $BIN profile --model models/tiny-target --reprofile "$@" "${EXTRA[@]}" 2>&1 |
    awk -v l="$label" '$1=="1"{t1=$3} $1=="9"{t9=$3} END{printf "%s %s %s %.3f\n", l, t1, t9, t9/t1}'
}
for i in $(seq $N); do
  for isa in vnni avx512fp16 avx512fp16 vnni; do
    run "bf16_$isa" --isa $isa
    [[ $isa == vnni ]] && run int8_vnni --isa vnni --quantization int8
  done
done
