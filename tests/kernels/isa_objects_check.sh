#!/usr/bin/env bash
# The objects compiled for a higher ISA (src/kernels/isa/) must define no weak or unique
# symbols: an inline function emitted there (compiled with AVX-512) could be the copy the
# linker keeps for the whole program, which would then fail on an AVX2-only CPU.
# Usage: isa_objects_check.sh OBJECT...
set -euo pipefail
status=0
for object in "$@"; do
  case "$object" in */kernels/isa/*) ;; *) continue ;; esac
  shared=$(nm -C --defined-only "$object" | awk '$2 ~ /^[WVu]$/ && $3 != "DW.ref.__gxx_personality_v0"')
  if [[ -n "$shared" ]]; then
    echo "$object defines symbols the linker may share with other code:"
    echo "$shared"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "ISA objects define no shared symbols ($# objects checked)"
exit $status
