#!/usr/bin/env bash
# Holds the small-file stage's disk phases (docs/small-files.md) against
# bonnie++ -n and fio's filecreate / filestat / filedelete engines, on the
# same directory, and prints the ratios (ours / peer; target >= 0.9).
#
# All three do metadata only (files of 0 bytes: fio's file engines do no
# I/O, bonnie++ -n N:0:0 neither), sequential order, COUNT files over DIRS
# directories. chokepoint runs its real stage through `diagnose --server
# local --client local` with a plan of [files] alone and reads the server
# end's rows back from `show --json` (median of ROUNDS passes); bonnie++ and
# fio run ROUNDS times each and their medians are taken too.
#
# Usage (root): bench/files.sh [--dir /var/tmp] [--count 131072] [--dirs 10] [--rounds 3] [--no-build]
# bonnie++ comes from scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=/var/tmp
COUNT=131072
DIRS=10
ROUNDS=3
BUILD=1
while (($#)); do
  case "$1" in
    --dir) BASE=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --dirs) DIRS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --no-build) BUILD=; shift ;;
    *) echo "usage: $0 [--dir D] [--count N] [--dirs N] [--rounds N] [--no-build]" >&2; exit 2 ;;
  esac
done
if ((COUNT % 1024)); then echo "--count must be a multiple of 1024 (bonnie++ -n counts KiFiles)" >&2; exit 2; fi
command -v bonnie++ >/dev/null || { echo "bonnie++ missing: run scripts/install-deps.sh" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio missing: run scripts/install-deps.sh" >&2; exit 1; }
[ -n "$BUILD" ] && cmake --build build --target chokepoint chokepoint-agent >/dev/null
CP=./build/bin/chokepoint
WORK=$(mktemp -d "$BASE/chokepoint-files-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/peer"

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# --- chokepoint: the files stage alone, on the server end's disk_dir -------
cat >"$WORK/plan.ini" <<EOF
[server]
disk_dir = $WORK
[client]
disk_dir = $WORK
[disk]
enabled = no
[tcp]
enabled = no
[protocol]
enabled = no
[files]
count = $COUNT
size = 0
dirs = $DIRS
order = sequential
budget = 0
EOF
for ((i = 1; i <= ROUNDS; i++)); do
  "$CP" diagnose --server local --client local --plan "$WORK/plan.ini" --db "$WORK/cp.db" -q \
    >/dev/null 2>"$WORK/diagnose.err" || { cat "$WORK/diagnose.err" >&2; exit 1; }
done
# The server rows' samples (ops/s) from every run's JSON report.
for ((id = 1; id <= ROUNDS; id++)); do
  "$CP" show "$id" --db "$WORK/cp.db" --json
done | python3 -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read(); i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    doc, i = dec.raw_decode(text, i)
    for r in doc["ladder"]:
        if r.get("unit") == "ops/s" and r["where"] == "server":
            for v in r["samples_bytes_per_s"]:
                print(r["op"], v)
' >"$WORK/ours.txt"

# --- fio: filecreate, filestat, filedelete on the same tree shape ----------
# One job per directory (COUNT / DIRS files each), run one after the other
# (one at a time, as ours); IOPS = files per second, summed over the time.
fio_phase() {  # engine -> files/s
  local engine=$1 total_ops=0 total_ms=0 out ops ms
  for ((d = 0; d < DIRS; d++)); do
    mkdir -p "$WORK/peer/fio$d"
    out=$(fio --name="f$d" --directory="$WORK/peer/fio$d" --ioengine="$engine" \
      --nrfiles=$((COUNT / DIRS)) --filesize=4k --bs=4k --rw=read --openfiles=1 \
      --create_on_open=1 --output-format=json 2>/dev/null)
    ops=$(python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j["read"]["total_ios"])' <<<"$out")
    ms=$(python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j["read"]["runtime"])' <<<"$out")
    total_ops=$((total_ops + ops)); total_ms=$((total_ms + ms))
  done
  python3 -c "print($total_ops / max($total_ms, 1) * 1000)"
}
declare -A FIO
for ((i = 1; i <= ROUNDS; i++)); do
  rm -rf "$WORK/peer"/*
  c=$(fio_phase filecreate)
  s=$(fio_phase filestat)
  d=$(fio_phase filedelete)
  echo "create $c" >>"$WORK/fio.txt"
  echo "stat $s" >>"$WORK/fio.txt"
  echo "delete $d" >>"$WORK/fio.txt"
done
rm -rf "$WORK/peer"/*

# --- bonnie++ -n: sequential create, stat ("Read"), delete -----------------
for ((i = 1; i <= ROUNDS; i++)); do
  bonnie++ -q -d "$WORK/peer" -s 0 -n "$((COUNT / 1024)):0:0:$DIRS" -u root 2>/dev/null |
    tail -1 >>"$WORK/bonnie.csv"
done
# bonnie++ 2.00's CSV (format 1.98): field 21 is num_files, then max, min,
# num_dirs, file_chunk_size, then seq create, its cpu, seq stat, cpu, seq
# delete, cpu. "+++++" is bonnie++'s "too fast to measure" (< 500 ms).
python3 - "$WORK/bonnie.csv" >"$WORK/bonnie.txt" <<'EOF'
import csv, sys
for row in csv.reader(open(sys.argv[1])):
    base = 21  # num_files
    for name, k in (("create", 0), ("stat", 2), ("delete", 4)):
        v = row[base + 5 + k]
        print(name, v if v not in ("", "+++++") else "nan")
EOF

printf '%-8s %12s %12s %12s %8s %8s\n' phase chokepoint fio bonnie++ vs-fio vs-bonnie
for phase in create stat delete; do
  ours=$(awk -v p="files-$phase" -v q="$phase" '$1 == q || $1 == p {print $2}' "$WORK/ours.txt" | median)
  fio=$(awk -v p="$phase" '$1 == p {print $2}' "$WORK/fio.txt" | median)
  bon=$(awk -v p="$phase" '$1 == p {print $2}' "$WORK/bonnie.txt" | grep -v nan | median || true)
  python3 -c "
o, f = float('$ours'), float('$fio')
b = float('${bon:-nan}') if '${bon}' else float('nan')
r = lambda x, y: f'{x / y:.2f}' if y == y and y > 0 else '-'
print(f'%-8s %12.0f %12.0f %12s %8s %8s' % ('$phase', o, f, f'{b:.0f}' if b == b else '+++++', r(o, f), r(o, b)))
"
done
echo "($COUNT files of 0 bytes over $DIRS directories in $BASE, $(stat -f -c %T "$BASE"), median of $ROUNDS rounds; ops/s)"
