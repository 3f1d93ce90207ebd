#!/usr/bin/env bash
# Runs every native fuzz target in the module for a short time each.
# Usage: scripts/fuzz.sh [DURATION]   (default 10s)
set -euo pipefail
time=${1:-10s}
cd "$(dirname "$0")/.."
status=0
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^.*func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
  pkg=./$(dirname "$file")
  echo "fuzz $pkg $name ($time)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" -fuzzminimizetime 2s "$pkg" >/tmp/fuzz.$$.log 2>&1; then
    cat /tmp/fuzz.$$.log; status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sed 's|^\./||')
rm -f /tmp/fuzz.$$.log
exit $status
