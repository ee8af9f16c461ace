# Rounds 10–13 as they ran, one after another (repository root).
set -e
D=docs/results/zen5/session-more-rounds; R=/work/runs/s44
bash $D/regen10.sh && bash $D/train10.sh
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark $R/eval160 160 ten=$R/ten/drafter
bash $D/round.sh 11 $R/ten/drafter eleven 71 72 69
bash $D/round.sh 12 $R/eleven/drafter twelve 81 82 79
bash $D/round.sh 13 $R/twelve/drafter thirteen 91 92 89
bash $D/ship.sh
