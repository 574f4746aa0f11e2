#!/usr/bin/env bash
# Holds the small-file stage's disk phases (docs/small-files.md) against
# bonnie++ -n and fio's filecreate / filestat / filedelete engines, on the
# same filesystem, and prints the ratios (ours / peer; target >= 0.9).
#
# Like against like:
# - All three do metadata only: files of 0 bytes (fio's file engines do no
#   I/O, bonnie++ -n N:0:0 neither), COUNT files over DIRS directories, a
#   directory at a time (bonnie++ fills one at a time; fio runs one job per
#   directory, one after the other; chokepoint's sequential pass goes a
#   directory at a time), create, then stat, then delete.
# - chokepoint's create ends with one syncfs (the journal commit a copy pays);
#   bonnie++ -n and fio do not sync, so the create is printed twice: as the
#   stage stores it, and without the syncfs (`create-nosync`).
# - fio with file_service_type=sequential: its default (roundrobin) walks its
#   file list for every I/O, which made it 20x slower at 13107 files per job
#   (fio's own cost, quadratic in nrfiles, not the disk's).
# - A fresh ext4 (mkfs.ext4's defaults: with a journal) on a loop device by
#   default: on an ext4 without a journal, every create skips the inodes
#   deleted in the last 5 s (300 s while their table block is dirty:
#   recently_deleted() in fs/ext4/ialloc.c), so a tool that runs right after
#   another's delete pays for it (perf: up to 90 % of its create). --dir runs
#   in a directory as it is instead.
# - The tools take turns, the order rotated each round, and before each one
#   the filesystem is synced and left SETTLE seconds; medians over ROUNDS.
# chokepoint runs through bench/files_bench (build/bin/files_bench): the disk
# probe's files_pass, the function the agent's `files` request runs.
#
# Usage (root): bench/files.sh [--dir D | --image-dir /var/tmp --image-size 4G]
#                 [--count 131072] [--dirs 10] [--rounds 5] [--settle 6] [--no-build]
# bonnie++ and fio come from scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=
IMAGE_DIR=/var/tmp
IMAGE_SIZE=4G
COUNT=131072
DIRS=10
ROUNDS=5
SETTLE=6
BUILD=1
source bench/lib.sh
parse_options "--dir DIR --image-dir IMAGE_DIR --image-size IMAGE_SIZE --count COUNT --dirs DIRS
  --rounds ROUNDS --settle SETTLE --no-build BUILD=" \
  "$0 [--dir D | --image-dir D --image-size S] [--count N] [--dirs N] [--rounds N] [--settle S] [--no-build]" "$@"
if ((COUNT % 1024)); then echo "--count must be a multiple of 1024 (bonnie++ -n counts KiFiles)" >&2; exit 2; fi
command -v bonnie++ >/dev/null || { echo "bonnie++ missing: run scripts/install-deps.sh" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio missing: run scripts/install-deps.sh" >&2; exit 1; }
[ -n "$BUILD" ] && cmake --build build --target files_bench >/dev/null
FB=./build/bin/files_bench

WORK=$(mktemp -d "${IMAGE_DIR}/chokepoint-files-bench.XXXXXX")
MNT=
cleanup() {
  if [ -n "$MNT" ]; then umount "$MNT" 2>/dev/null || umount -l "$MNT"; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "$DIR" ]; then
  truncate -s "$IMAGE_SIZE" "$WORK/ext4.img"
  mkfs.ext4 -q -F "$WORK/ext4.img"
  MNT=$WORK/mnt
  mkdir -p "$MNT"
  mount -o loop "$WORK/ext4.img" "$MNT"
  DIR=$MNT
else
  DIR=$(mktemp -d "$DIR/chokepoint-files-bench.XXXXXX")
  trap 'cleanup; rm -rf "$DIR"' EXIT
fi
FSDESC=$(findmnt -no FSTYPE,SOURCE -T "$DIR" | tr -s ' ')
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
settle() { sync -f "$DIR"; sleep "$SETTLE"; }

# --- chokepoint: one sequential pass through the probe -----------------------
run_chokepoint() {
  mkdir -p "$DIR/cp"
  "$FB" --dir "$DIR/cp" --count "$COUNT" --size 0 --dirs "$DIRS" --order sequential >"$WORK/fb.out"
  awk '$1 == "create" {print "create", $5; print "create-nosync", $6}
       $1 == "stat" || $1 == "delete" {print $1, $5}' "$WORK/fb.out" >>"$WORK/ours.txt"
  rm -rf "$DIR/cp"
}

# --- fio: filecreate, filestat, filedelete, one job per directory ------------
fio_phase() {  # engine -> files/s over all directories (ops / summed runtime)
  local engine=$1 total_ops=0 total_ms=0 out
  for ((d = 0; d < DIRS; d++)); do
    mkdir -p "$DIR/fio/d$d"
    out=$(fio --name="f$d" --directory="$DIR/fio/d$d" --ioengine="$engine" \
      --nrfiles=$((COUNT / DIRS + (d < COUNT % DIRS))) --filesize=4k --bs=4k --rw=read --openfiles=1 \
      --file_service_type=sequential --create_on_open=1 --output-format=json 2>/dev/null)
    read -r ops ms < <(python3 -c 'import json,sys; r=json.load(sys.stdin)["jobs"][0]["read"]; print(r["total_ios"], r["runtime"])' <<<"$out")
    total_ops=$((total_ops + ops)); total_ms=$((total_ms + ms))
  done
  python3 -c "print($total_ops / max($total_ms, 1) * 1000)"
}
run_fio() {
  rm -rf "$DIR/fio"
  local c s d
  c=$(fio_phase filecreate)
  s=$(fio_phase filestat)
  d=$(fio_phase filedelete)
  printf 'create %s\ncreate-nosync %s\nstat %s\ndelete %s\n' "$c" "$c" "$s" "$d" >>"$WORK/fio.txt"
  rm -rf "$DIR/fio"
}

# --- bonnie++ -n: sequential create, stat ("Read"), delete -------------------
# bonnie++ 2.00's CSV (format 1.98): field 21 is num_files, then max, min,
# num_dirs, file_chunk_size, then seq create, its cpu, seq stat, cpu, seq
# delete, cpu. "+++++" is bonnie++'s "too fast to measure" (< 500 ms).
run_bonnie() {
  mkdir -p "$DIR/bonnie"
  bonnie++ -q -d "$DIR/bonnie" -s 0 -n "$((COUNT / 1024)):0:0:$DIRS" -u root 2>/dev/null |
    tail -1 | python3 -c '
import csv, sys
for row in csv.reader(sys.stdin):
    base = 21  # num_files
    for name, k in (("create", 0), ("create-nosync", 0), ("stat", 2), ("delete", 4)):
        v = row[base + 5 + k]
        print(name, v if v not in ("", "+++++") else "nan")
' >>"$WORK/bonnie.txt"
  rm -rf "$DIR/bonnie"
}

TOOLS=(chokepoint fio bonnie)
for ((i = 0; i < ROUNDS; i++)); do
  for ((k = 0; k < 3; k++)); do
    tool=${TOOLS[$(((i + k) % 3))]}
    settle
    "run_$tool"
  done
done

printf '%-14s %12s %12s %12s %8s %8s\n' phase chokepoint fio bonnie++ vs-fio vs-bonnie
for phase in create create-nosync stat delete; do
  ours=$(awk -v p="$phase" '$1 == p {print $2}' "$WORK/ours.txt" | median)
  fio=$(awk -v p="$phase" '$1 == p {print $2}' "$WORK/fio.txt" | median)
  bon=$(awk -v p="$phase" '$1 == p {print $2}' "$WORK/bonnie.txt" | grep -v nan | median || true)
  python3 -c "
o, f = float('$ours'), float('$fio')
b = float('${bon:-nan}') if '${bon}' else float('nan')
r = lambda x, y: f'{x / y:.2f}' if y == y and y > 0 else '-'
print(f'%-14s %12.0f %12.0f %12s %8s %8s' % ('$phase', o, f, f'{b:.0f}' if b == b else '+++++', r(o, f), r(o, b)))
"
done
echo "($COUNT files of 0 bytes over $DIRS directories on $FSDESC, median of $ROUNDS rounds; ops/s;" \
  "load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
if [ -n "${FILES_BENCH_RAW:-}" ]; then
  for f in ours fio bonnie; do sed "s/^/$f /" "$WORK/$f.txt"; done >"$FILES_BENCH_RAW"
fi
