#!/bin/bash
# Bytes per stored run and the time of history, show and compare at N runs.
# Usage: bench/history.sh [BUILD_DIR] (default build); writes in a temp dir.
set -euo pipefail
build=${1:-build}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $s" | bc; }
printf '%6s %12s %10s %10s %10s\n' N bytes/run history_s show_s compare_s
for n in ${HISTORY_NS:-10 100 1000}; do
  db=$dir/h$n.db
  "$build/bin/history_fill" "$db" "$n"
  sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
  bytes=$(stat -c %s "$db")
  h=$(t "$build/bin/chokepoint" history --db "$db" --limit "$n")
  s=$(t "$build/bin/chokepoint" show latest --db "$db")
  c=$(t "$build/bin/chokepoint" compare 1 latest --db "$db")
  printf '%6d %12d %10.3f %10.3f %10.3f\n' "$n" $((bytes / n)) "$h" "$s" "$c"
done
