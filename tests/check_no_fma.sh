#!/bin/sh
# Counts the fused multiply-add instructions (x86-64: vfmadd*, vfmsub*,
# vfnmadd*, vfnmsub*, vfmaddsub*, vfmsubadd*) in a binary's machine code; fails
# when there is any. Usage: tests/check_no_fma.sh OBJDUMP BINARY
n=$("$1" -d --no-show-raw-insn "$2" | grep -cE '[[:space:]]vfn?m(add|sub)')
echo "fused multiply-adds in $2: $n"
[ "$n" = 0 ]
