#!/usr/bin/env bash
# Puts the peer implementations that bench/peer_*.py time into bench/.peers/
# (git-ignored; never committed): overcooked_ai's MDP and JaxMARL's Overcooked,
# each at the commit the published comparisons used. Only the source folders the
# peers need are extracted. Nothing is built.
#
# Usage: bench/fetch_peers.sh
#   OVERCOOKED_AI_GIT=<url or git dir>  (default: the GitHub repository)
#   JAXMARL_GIT=<url or git dir>        (default: the GitHub repository)
# A local git directory (a mirror or bare clone) works where there is no network.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$root/bench/.peers"
mkdir -p "$peers"

oc_git="${OVERCOOKED_AI_GIT:-https://github.com/HumanCompatibleAI/overcooked_ai.git}"
oc_commit=739950a079cdaed5a44fcc662efc40244c205d06
jm_git="${JAXMARL_GIT:-https://github.com/FLAIROx/JaxMARL.git}"
jm_commit=c793d095618c6d3edfb5632802348f57b70a4b94

# extract GIT COMMIT DEST PATH... : the given paths of one commit, without a work tree.
extract() {
  local git_src="$1" commit="$2" dest="$3"
  shift 3
  local tmp
  tmp="$(mktemp -d)"
  if [ -d "$git_src" ]; then
    gitdir="$git_src"
  else
    # A blob-less shallow fetch of the one commit; `git archive` then fetches
    # only the blobs of the paths asked for.
    git init -q --bare "$tmp/repo.git"
    git -C "$tmp/repo.git" remote add origin "$git_src"
    git -C "$tmp/repo.git" config remote.origin.promisor true
    git -C "$tmp/repo.git" config remote.origin.partialclonefilter blob:none
    git -C "$tmp/repo.git" fetch -q --depth 1 --filter=blob:none origin "$commit"
    gitdir="$tmp/repo.git"
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  if ! git --git-dir="$gitdir" archive -o "$tmp/peer.tar" "$commit" "$@"; then
    [ -d "$git_src" ] && exit 1
    # The server would not send single blobs: fetch the whole commit instead.
    git -C "$gitdir" config --unset remote.origin.promisor
    git -C "$gitdir" fetch -q --depth 1 --refetch origin "$commit"
    git --git-dir="$gitdir" archive -o "$tmp/peer.tar" "$commit" "$@"
  fi
  tar -x -C "$dest" -f "$tmp/peer.tar"
  echo "$commit" > "$dest/COMMIT"
  rm -rf "$tmp"
  echo "fetched $(basename "$dest") at $commit into $dest"
}

# overcooked_ai: the MDP (get_state_transition, lossless_state_encoding) and its layouts.
extract "$oc_git" "$oc_commit" "$peers/overcooked_ai" \
  LICENSE src/overcooked_ai_py/__init__.py src/overcooked_ai_py/mdp src/overcooked_ai_py/data/layouts \
  src/overcooked_ai_py/static.py src/overcooked_ai_py/utils.py src/overcooked_ai_py/planning

# JaxMARL: only Overcooked (v1) and the two modules it imports; peer_jaxmarl.py
# loads them without jaxmarl/__init__.py, which imports every other env.
extract "$jm_git" "$jm_commit" "$peers/JaxMARL" \
  LICENSE jaxmarl/environments/overcooked jaxmarl/environments/multi_agent_env.py \
  jaxmarl/environments/spaces.py
