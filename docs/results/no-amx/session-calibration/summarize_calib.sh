#!/bin/bash
# One line per run of calib_ab.sh: per-domain tau and speedup, the mean of the five domains'
# speedups, pooled tau ("all"), and the head's offsets per draft position (greedy; sampled where a
# run has sampled requests).
#   summarize_calib.sh OUT_DIR
for f in $(ls "$1"/*.txt | grep -v /summary.txt | sort -t/ -k2 -V); do
  name=$(basename "$f" .txt)
  awk -v name="$name" '
    /^domain/ {t = 1; next}
    t && /^all/ {pooled = $2; t = 0; next}
    t && NF >= 7 {taus = taus sprintf(" %s %s %s", $1, $3, $6); s = $6; sub("x", "", s); sum += s; k++}
    /^head +greedy/ {off = ""; for (i = 3; i <= NF; i++) off = off " " $i}
    /^head +sampled/ {soff = " | sampled"; for (i = 3; i <= NF; i++) soff = soff " " $i}
    END {printf "%-12s%s | mean %.2fx | tau all %s | head offsets%s%s\n", name, taus, sum / k, pooled, off, soff}' "$f"
done
