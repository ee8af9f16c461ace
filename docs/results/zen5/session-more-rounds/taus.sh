# τ per domain of `dspark eval` outputs, with the pooled τ of all rounds ("all" row) and the
# macro mean (each domain weighted alike): taus.sh FILE...
for f in "$@"; do
  echo -n "$(basename $f .txt): "
  awk '/^domain/{p=1;next}
       p&&NF>=3&&$1!="all"{printf "%s %s  ", $1, $3; s+=$3; n++}
       p&&$1=="all"{printf "| pooled %s macro %.3f\n", $2, s/n; exit}' "$f"
done
