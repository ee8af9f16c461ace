# After fair.sh: the retrained DFlash exported and given the greedy draft vocabulary the
# shipped one has (the 2,048 tokens of tiny-target's greedy answers, counted over the greedy
# regenerations of DSpark rounds 6-13), then every eval prompt, fixed K = 8, both
# temperatures, for the retrained DFlash and draft LM.
#   after.sh   (repository root)
set -e
cd /work/main
T=build/train/dspark-train; R=/work/runs/s45
$T export --checkpoint $R/dflash/drafter --out $R/dflash_export --verifier tiny-target
$T draft-vocab --drafter $R/dflash_export --target models/tiny-target --data /work/runs/s44/greedy_all --size 2048 \
  --greedy --out $R/dflash_gv > $R/dflash_vocab.log 2>&1
# The draft LM ships as its weights beside models/tiny-draft-lm's config and tokenizer.
mkdir -p $R/draftlm_ship
cp models/tiny-draft-lm/*.json $R/draftlm_ship/ && cp $R/draftlm/drafter/model.safetensors $R/draftlm_ship/
E=../shared/data/eval
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark $R/evalall 100000 \
  dflash_new=$R/dflash_gv draftlm_new=$R/draftlm_ship
# The shipped DSpark on MT-Bench again, for the pooled row of its eight categories (the
# other sets' figures are those of the shipped round 13, evalall/ of session-more-rounds/).
for t in 1 0; do
  build/src/cli/dspark eval --model models/tiny-target --speculator models/tiny-target-dspark --spec-schedule fixed \
    --num-spec-tokens 8 --temperature $t --max-tokens 128 --threads 2 --limit 100000 --no-baseline \
    --dataset $E/mtbench_question.jsonl 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > $R/evalall/T${t}_dspark_mtbench.txt
done
echo done > $R/after.done
