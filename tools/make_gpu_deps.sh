#!/usr/bin/env bash
# Builds .gpu_deps/, the bundle tools/gpu_check.sh uses on a GPU machine that
# has no GoogleTest, nlohmann_json or zlib development files and no network:
# GoogleTest's sources and a prefix with nlohmann_json's headers and CMake
# package and zlib's static library, all copied from this Debian machine's
# packages (googletest, nlohmann-json3-dev, zlib1g-dev; installed if missing).
# The folder is git-ignored; name it in the device run's carry list.
#
# Also downloads the Vulkan loader and glvnd packages into .gl/ beside it, and
# packs Mesa's lavapipe (the CPU's Vulkan driver) with the libraries it needs
# beyond the C and C++ runtimes into .lvp/lvp.tar.xz (about 40 MB), for
# watching a GPU's worlds with the frames drawn on the host's cores
# (docs/viewer.md, "Watching on a compute GPU"). On the GPU machine:
#   mkdir -p /opt/lvp && tar xJf .lvp/lvp.tar.xz -C /opt/lvp
#   export LD_LIBRARY_PATH=/opt/lvp/lib:$LD_LIBRARY_PATH VK_ADD_DRIVER_FILES=/opt/lvp/lvp_icd.json
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

# lavapipe, its ICD file pointing at /opt/lvp/lib.
lvp_so=/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
if [ ! -f "$lvp_so" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers
fi
stage="$(mktemp -d)"
mkdir -p "$stage/lib"
cp -L "$lvp_so" "$stage/lib/"
for lib in $(ldd "$lvp_so" | awk '$3 ~ /^\// {print $3}'); do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|libgcc_s.so.*|libstdc++.so.*|libz.so.*|libzstd.so.*|libexpat.so.*|liblzma.so.*|libtinfo.so.*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
api=$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' /usr/share/vulkan/icd.d/lvp_icd.*.json | head -1)
printf '{"ICD":{"api_version":"%s","library_path":"/opt/lvp/lib/libvulkan_lvp.so"},"file_format_version":"1.0.0"}\n' "${api:-1.1.230}" >"$stage/lvp_icd.json"
lvp="$(dirname "$dest")/.lvp"
mkdir -p "$lvp"
tar cJf "$lvp/lvp.tar.xz" -C "$stage" .
rm -rf "$stage"
echo "make_gpu_deps: wrote $lvp/lvp.tar.xz ($(du -sh "$lvp/lvp.tar.xz" | cut -f1))"
