#!/bin/sh
# Whether the host code would keep its bits on an Arm machine (a Grace host,
# say): cross-compiles the float-heavy translation units (the physics module,
# hide_and_seek, physics_scenes) for aarch64 at -O3 with the project's float
# options, for the base instruction set and for an SVE core, and counts the
# fused multiply-adds in the objects (check_no_fma.sh). On Arm FMA is part of
# the base instruction set and there is no -mno-fma, so -ffp-contract=off
# alone must keep them out; on x86-64-v3 GCC 12 fused in spite of it
# (cmake/HostArch.cmake). Exits 77 (skipped) without a cross compiler.
# Usage: tests/check_no_fma_arm.sh CXX OBJDUMP SOURCE_DIR WORK_DIR FLOAT_OPTIONS...
cxx=$1 objdump=$2 src=$3 work=$4
shift 4
if ! command -v "$cxx" >/dev/null 2>&1 || ! command -v "$objdump" >/dev/null 2>&1; then
    echo "no aarch64 cross compiler ($cxx, $objdump): skipped (tools/test.sh installs g++-aarch64-linux-gnu)"
    exit 77
fi
mkdir -p "$work"
objects=""
for cpu in generic neoverse-v1; do
    for unit in physics/physics.cpp physics/hull_build.cpp envs/hide_and_seek/hide_and_seek.cpp \
        envs/physics_scenes/scenes.cpp; do
        obj="$work/$cpu-$(basename "$unit" .cpp).o"
        "$cxx" -mcpu="$cpu" -std=c++20 -O3 -DNDEBUG "$@" -I"$src" -c "$src/$unit" -o "$obj" || exit 1
        objects="$objects $obj"
    done
done
# shellcheck disable=SC2086 # the list of objects
exec "$(dirname "$0")/check_no_fma.sh" "$objdump" $objects
