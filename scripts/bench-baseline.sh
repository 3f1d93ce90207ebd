#!/usr/bin/env bash
# Measures this checkout's detour beside the detour of an earlier commit,
# in the same run of the gateway benchmark (bench/gateway -baseline): the
# only comparison this kind of figure survives on a machine whose speed
# moves from minute to minute.
#
# Usage: scripts/bench-baseline.sh [REV [bench/gateway flags...]]
#   REV defaults to HEAD~1. Without flags: the 32-connection cell, plain and
#   streamed, 5 rounds, and 1,000 slow streams (about 4 minutes).
#   e.g. scripts/bench-baseline.sh dec731a -conns 32 -stream false -rounds 7 -slow-streams 0
set -euo pipefail
rev=${1:-HEAD~1}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.."
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || {
  echo "bench-baseline: $rev names no commit here (try a hash, a tag or HEAD~1)" >&2
  exit 2
}
if [ $# -eq 0 ]; then
  set -- -conns 32 -systems proxy,detour -rounds 5 -failover=false -paired=false -ledger-conns "" -slow-streams 1000
fi
tmp=$(mktemp -d)
cleanup() {
  git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
git worktree add --detach --quiet "$tmp/src" "$rev"
echo "bench-baseline: building $rev's detour and this checkout's, as make build does" >&2
(cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/old/" ./cmd/detour)
CGO_ENABLED=0 go build -trimpath -o "$tmp/new/" ./cmd/detour ./bench/upstream ./bench/revproxy
go run ./bench/gateway -bin "$tmp/new" -baseline "$tmp/old/detour" "$@"
