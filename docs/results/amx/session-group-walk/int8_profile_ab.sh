# int8_profile_ab.sh ROUNDS BIN...: `dspark profile --reprofile --isa vnni --quantization int8`, each round runs the bins in order then reversed
N=$1; shift; BINS=("$@"); REV=()
for ((i=${#BINS[@]}-1;i>=0;i--)); do REV+=("${BINS[i]}"); done
for r in $(seq $N); do for b in "${BINS[@]}" "${REV[@]}"; do
  $b profile --model models/tiny-target --reprofile --isa vnni --quantization int8 2>&1 |
    awk -v b="$b" '$1=="1"{t1=$3} $1=="9"{t9=$3} END{printf "%s %s %s %.3f\n", b, t1, t9, t9/t1}'
done; done
