# Temperature 1, fixed K = 8: 160 GSM8K *training* questions (lines 7,001-7,160 of the
# corpus file, as trainq.jsonl) beside the first 160 test questions, round 13 and round 14.
#   probe.sh R13_DIR    (round 13 as shipped before; it ran as models/tiny-target-dspark,
#   before round 15 replaced it; R13_DIR from git: README)
set -e
R13=$1; R=/work/runs/s48; mkdir -p $R/evalfiles $R/probe $R/tf
sed -n '7001,7160p' ../shared/data/corpus/gsm8k_train.jsonl > $R/evalfiles/trainq.jsonl
for arm in r13=$R13 r14a=$R/ra; do
  name=${arm%%=*}; dir=${arm#*=}
  build/src/cli/dspark eval --model models/tiny-target --speculator $dir --spec-schedule fixed --num-spec-tokens 8 \
    --temperature 1 --max-tokens 128 --threads 2 --limit 160 --no-baseline \
    --dataset $R/evalfiles/trainq.jsonl --dataset ../shared/data/eval/gsm8k_test.jsonl 2>&1 |
    tr '\r' '\n' | grep -v "prompts, tau" > $R/probe/T1_$name.txt
done
# The same drafter teacher forced on 100 of round 14's temperature-1 GSM8K answers
# (calibrate's table: mean survival per position; nothing written).
grep '"source":"gsm8k"' $R/data14/regen_t1.jsonl | head -200 > $R/tf/t1_gsm8k.jsonl
grep '"source":"gsm8k"' $R/data14/regen_greedy.jsonl | head -50 > $R/tf/g_gsm8k.jsonl
build/train/dspark-train calibrate --target models/tiny-target --drafter $R13 \
  --data $R/tf/t1_gsm8k.jsonl --greedy-data $R/tf/g_gsm8k.jsonl --sampled-data $R/tf/t1_gsm8k.jsonl \
  --val-fraction 1 --max-sequences 100 --threads 2 --write false > $R/probe/tf_gsm8k_r13.txt 2>&1
