#!/usr/bin/env bash
# The main job: set up, build, and step every shipped env at batch on the best
# device present (the GPU when there is one, else all CPU cores), printing
# env-steps per second.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/build.sh" release
"$root/build/release/tools/orrery" bench --device auto --worlds 1024,65536 "$@"
