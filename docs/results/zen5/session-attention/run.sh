#!/bin/bash
# The session's side-by-side measurements: base = commit 14c9e43's attention.cpp and
# step_profile.cpp (with this session's bench sources), final = this session's last commit.
cd /work/runs/s36
OUT=final
echo "## kernels_bench BM_AttentionVerify, AVX-512 tile, 1 thread (min over 4 rounds alternating)" > $OUT/attention.txt
./ab_att.sh 4 1 ./kb_base ./kb_final >> $OUT/attention.txt
echo "## 2 threads" >> $OUT/attention.txt
./ab_att.sh 4 2 ./kb_base ./kb_final >> $OUT/attention.txt
echo "## DSPARK_ISA=avx2 (the AVX2 tile), 1 thread" >> $OUT/attention.txt
DSPARK_ISA=avx2 ./ab_att.sh 4 1 ./kb_base ./kb_final >> $OUT/attention.txt
echo "## DSPARK_ISA=avx2, 2 threads" >> $OUT/attention.txt
DSPARK_ISA=avx2 ./ab_att.sh 4 2 ./kb_base ./kb_final >> $OUT/attention.txt
echo "## decode_step_bench BM_VerifyOverDecode paths 0 (bf16 dpbf16), 3 (int8 vnni512), 5 (int8 avx2), histories 128 and 896 (paths 0, 3); min over 4 rounds of each round's medians" > $OUT/steps.txt
./ab_dsb.sh 4 'BM_VerifyOverDecode/path:(0|3|5)/' ./dsb_base ./dsb_final >> $OUT/steps.txt
cp /tmp/ab_dsb_raw.txt $OUT/steps_raw.txt
