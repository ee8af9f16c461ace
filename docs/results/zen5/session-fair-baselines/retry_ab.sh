#!/bin/bash
# The draft LM on its default (adaptive) schedule, greedy, with the step-cost profile cached
# earlier (when the machine was faster), two dspark binaries A B B A: before and after the
# schedule measures a drafter again when only its measured time keeps it off.
#   retry_ab.sh BIN_A BIN_B OUT_DIR LIMIT DRAFT_LM_DIR   (repository root)
exec bash "$(dirname "$0")/fix_ab.sh" "$@"
