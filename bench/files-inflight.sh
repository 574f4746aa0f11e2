#!/usr/bin/env bash
# NFS small files with several operations in flight: chokepoint's small-file
# pass (bench/transfer_bench `files`, as the client agent's files_share runs
# it, one directory) over the lab's RAM share, NFSv3 and NFSv4, at
# `--in-flight` 1, 4 and 16 on ONE connection (the nfs driver's libnfs async
# calls, Capabilities::file_ops_in_flight) against 4 and 16 on a session
# (a connection) per operation in flight (`--sessions`: the pass's path for
# drivers without the capability). The cases take turns, their order rotated
# each round; medians over the rounds of each phase's files/s, the mean in
# flight it kept and the client's CPU over the pass (user + system s).
#
# Usage (root): bench/files-inflight.sh [--runs 5] [--count 500] [--size 4096]
#   [--cases "3:1:one 3:8:one 4:1:one 4:8:one"] [--bench PATH/transfer_bench]
# --cases: version:in_flight:how (one = one connection, sessions = a session
# each); --bench: another build's transfer_bench (a before/after of a change).
# The lab is $CHOKEPOINT_LAB_INSTANCE's (default 0); one that is not up is
# brought up unshaped (--rate 0) and taken down after.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=5
COUNT=500
SIZE=4096
CASE_LIST="3:1:one 3:4:one 3:16:one 3:4:sessions 3:16:sessions 4:1:one 4:4:one 4:16:one 4:4:sessions 4:16:sessions"
TB=build/bin/transfer_bench
source bench/lib.sh
parse_options "--runs RUNS --count COUNT --size SIZE --cases CASE_LIST --bench TB" \
  "bench/files-inflight.sh [--runs N] [--count N] [--size BYTES] [--cases LIST] [--bench PATH]" "$@"
[ "$(id -u)" = 0 ] || { echo "files-inflight.sh: run as root (the lab's namespaces)" >&2; exit 2; }
CP=build/bin/chokepoint
[ -x "$CP" ] && [ -x "$TB" ] || { echo "files-inflight.sh: build first (scripts/build.sh)" >&2; exit 2; }

RAW=$(mktemp /tmp/chokepoint-files-inflight.XXXXXX)
cleanup() { rm -f "$RAW"; }
lab_up_unless_up cleanup

lab_share_env "$($CP lab status --json)"
on_server "rm -rf '$RAM/bench-inflight' && mkdir -p '$RAM/bench-inflight' && chown '$USER_:' '$RAM/bench-inflight'"

read -r -a CASES <<<"$CASE_LIST"
for ((r = 1; r <= RUNS; r++)); do
  n=${#CASES[@]}
  for ((k = 0; k < n; k++)); do
    c=${CASES[$(( (k + r) % n ))]}
    IFS=: read -r v f how <<<"$c"
    extra=()
    [ "$how" = sessions ] && extra=(--sessions)
    line=$(in_client "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$USER_" \
      --option version="$v" --in-flight "$f" "${extra[@]}" \
      files "bench-inflight/r$r-v$v-$f-$how" "$COUNT" "$SIZE")
    echo "$c $line" >> "$RAW"
    echo "round $r nfs$v x$f $how: $line"
  done
  on_server "rm -rf '$RAM/bench-inflight'/*"
done
on_server "rm -rf '$RAM/bench-inflight'"

echo
echo "medians over $RUNS rounds, $COUNT files of $SIZE bytes, files/s (mean in flight)"
python3 - "$RAW" <<'PY'
import collections, re, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    case, rest = line.split(" ", 1)
    rows[case].append(dict(re.findall(r"(\w+)=([\d.]+)", rest)))
print(f"  {'case':<22}" + "".join(f"{p:>16}" for p in ("create", "stat", "read", "delete")) + f"{'cpu s':>8}")
for case, runs in rows.items():
    v, f, how = case.split(":")
    cells = []
    for p in ("create", "stat", "read", "delete"):
        rate = statistics.median(float(x[p + "_per_s"]) for x in runs)
        mean = statistics.median(float(x[p + "_in_flight_mean"]) for x in runs)
        cells.append(f"{rate:9.0f} ({mean:4.1f})")
    cpu = statistics.median(float(x["cpu_seconds"]) for x in runs)
    name = f"nfs{v} x{f} " + ("one connection" if how == "one" else "sessions")
    print(f"  {name:<22}" + "".join(f"{c:>16}" for c in cells) + f"{cpu:8.2f}")
PY
