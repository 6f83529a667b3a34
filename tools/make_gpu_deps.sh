#!/usr/bin/env bash
# Builds .gpu_deps/, the bundle tools/gpu_check.sh uses on a GPU machine that
# has no GoogleTest, nlohmann_json or zlib development files and no network:
# GoogleTest's sources and a prefix with nlohmann_json's headers and CMake
# package and zlib's static library, all copied from this Debian machine's
# packages (googletest, nlohmann-json3-dev, zlib1g-dev; installed if missing).
# The folder is git-ignored; name it in the device run's carry list.
#
# Also downloads the Vulkan loader and glvnd packages into .gl/ beside it.
#
# Usage: tools/make_gpu_deps.sh [dest]   (default: .gpu_deps in the repository root)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/.gpu_deps}"
need=()
[ -f /usr/src/googletest/CMakeLists.txt ] || need+=(googletest)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/lib/x86_64-linux-gnu/libz.a ] || need+=(zlib1g-dev)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
rm -rf "$dest"
mkdir -p "$dest/prefix/include" "$dest/prefix/lib" "$dest/prefix/share/cmake"
cp -r /usr/src/googletest "$dest/googletest"
cp -r /usr/include/nlohmann "$dest/prefix/include/"
cp -r /usr/share/cmake/nlohmann_json "$dest/prefix/share/cmake/"
cp /usr/include/zlib.h /usr/include/zconf.h "$dest/prefix/include/"
cp /usr/lib/x86_64-linux-gnu/libz.a "$dest/prefix/lib/"
echo "make_gpu_deps: wrote $dest ($(du -sh "$dest" | cut -f1))"
# The Vulkan loader and glvnd libraries orrery-watch-bench needs where only the
# NVIDIA ICD is installed (gpu_check.sh's `watch` stage unpacks them from .gl/).
gl="$(dirname "$dest")/.gl"
mkdir -p "$gl"
(cd "$gl" && apt-get download -qq libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2 libstb0 2>/dev/null) &&
  echo "make_gpu_deps: wrote $gl ($(ls "$gl" | wc -l) packages)" || echo "make_gpu_deps: could not download the .gl packages"
