#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test Orrery.
# Idempotent: packages already present are not reinstalled. Needs root or sudo
# only when something is missing.
set -euo pipefail

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libgtest-dev zlib1g-dev nlohmann-json3-dev
  python3 python3-dev python3-pip python3-venv
)
# Extra packages each area asks for (viewer, ...) are listed in tools/apt-packages.d/*.txt.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for f in "$here"/apt-packages.d/*.txt; do
  [ -e "$f" ] || continue
  while read -r pkg _; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    APT_PACKAGES+=("$pkg")
  done < "$f"
done

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
