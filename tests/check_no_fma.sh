#!/bin/sh
# Counts the fused multiply-add instructions in machine code and fails when
# there is any: x86-64's vfmadd*, vfmsub*, vfnmadd*, vfnmsub*, vfmaddsub*,
# vfmsubadd*; aarch64's fmadd, fmsub, fnmadd, fnmsub, fmla, fmls, fnmla,
# fnmls, fmad, fmsb, fnmad, fnmsb (SVE) and fcmla.
# Usage: tests/check_no_fma.sh OBJDUMP BINARY...
objdump=$1
shift
status=0
for bin in "$@"; do
    n=$("$objdump" -d --no-show-raw-insn "$bin" |
        grep -cE '[[:space:]](vfn?m(add|sub)|(fn?madd|fn?msub|fn?ml[as]|fn?mad|fn?msb|fcmla)([[:space:].]|$))')
    echo "fused multiply-adds in $bin: $n"
    [ "$n" = 0 ] || status=1
done
exit $status
