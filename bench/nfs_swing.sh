#!/usr/bin/env bash
# Where an unshaped NFS figure's swing comes from: our nfs driver
# (bench/transfer_bench) and libnfs's nfs-cp take turns first moving the same
# 100 MB over NFSv3 (get, then put) between a tmpfs file and the lab's Ganesha
# RAM export, and every run prints what it cost, so that a slow round can be
# told apart as the machine's (preempted, more context switches, the same
# work) or the client's (more CPU, more page faults):
#   wall / empty   ms, the command and the same command on an empty file
#   own            s, transfer_bench's own clock (open to close); nfs-cp has none
#   cpu            ms, the process's user + system CPU (/usr/bin/time)
#   faults         minor page faults of the process
#   vcs / ics      voluntary / involuntary context switches
#   ganesha_ms     Ganesha's CPU during the run
#   load           the 1-minute load average
# Then per tool the medians and spreads, and the per-round ratios.
# The lab must be up (any rate; unshaped for what bench/protocols.md reports):
#   CHOKEPOINT_LAB_INSTANCE=4 chokepoint lab up --rate 0
#   CHOKEPOINT_LAB_INSTANCE=4 bench/nfs_swing.sh [--rounds 16] [--size 100MB]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=16
BYTES=100000000
while (($#)); do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --size) BYTES=$(python3 -c "import sys; print(int(float(sys.argv[1].removesuffix('MB')) * 1e6))" "$2"); shift 2 ;;
    *) echo "usage: $0 [--rounds 16] [--size 100MB]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "nfs_swing.sh: needs root (the lab)" >&2; exit 1; }
CP=./build/bin/chokepoint
TB=$(pwd)/build/bin/transfer_bench
ST=$($CP lab status --json) || { echo "nfs_swing.sh: no lab is up: $CP lab up --rate 0" >&2; exit 1; }
source bench/lib.sh
lab_vars "$ST" NS='d["client"]["netns"]' ADDR='d["server"]["data_address"]' \
  SSHD='d["server"]["sshd_pid"]' GPID='d["servers"]["nfsd_pid"]' U='d["servers"]["share_user"]' \
  RAM='next(s["server_dir"] for s in d["servers"]["shares"] if s["medium"]=="ram")'
UID_=$(id -u "$U")
GID_=$(id -g "$U")
W=$(mktemp -d /dev/shm/chokepoint-nfs-swing.XXXXXX)
trap 'rm -rf "$W"; nsenter -t "$SSHD" -m -- rm -rf "$RAM/swing"' EXIT
head -c "$BYTES" /dev/urandom > "$W/src.dat"
: > "$W/e.dat"
on_server "mkdir -p '$RAM/swing' && cat > '$RAM/swing/m.dat' && touch '$RAM/swing/e.dat' && chown -R '$U:' '$RAM/swing'" < "$W/src.dat"
now() { date +%s%N; }
gcpu() { awk '{print $14 + $15}' "/proc/$GPID/stat"; }  # clock ticks
url() { echo "nfs://$ADDR/ram/swing/$1?version=3&uid=$UID_&gid=$GID_"; }
# Commands, not functions: /usr/bin/time runs them.
OURS=(ip netns exec "$NS" "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$U" --option version=3)
PEER=(ip netns exec "$NS" nfs-cp)
run() {  # run ours|peer get|put ROUND: one line of figures
  local who=$1 op=$2 i=$3 s0 e0 s e g0 g1 out
  rm -f "$W/e.out" "$W/g.dat"
  local empty=() full=()
  if [ "$who" = ours ]; then
    if [ "$op" = get ]; then empty=("${OURS[@]}" get swing/e.dat "$W/e.out") full=("${OURS[@]}" get "swing/g-$i-ours.dat" "$W/g.dat")
    else empty=("${OURS[@]}" put "$W/e.dat" "swing/e-$i-ours.dat") full=("${OURS[@]}" put "$W/src.dat" "swing/p-$i-ours.dat"); fi
  else
    if [ "$op" = get ]; then empty=("${PEER[@]}" "$(url e.dat)" "$W/e.out") full=("${PEER[@]}" "$(url "g-$i-peer.dat")" "$W/g.dat")
    else empty=("${PEER[@]}" "$W/e.dat" "$(url "e-$i-peer.dat")") full=("${PEER[@]}" "$W/src.dat" "$(url "p-$i-peer.dat")"); fi
  fi
  s0=$(now); "${empty[@]}" > /dev/null; e0=$(now)
  g0=$(gcpu); s=$(now)
  out=$({ /usr/bin/time -f "TIME %U %S %R %w %c" "${full[@]}"; } 2>&1) ||
    { echo "nfs_swing.sh: $who $op failed: $out" >&2; exit 1; }
  e=$(now); g1=$(gcpu)
  [ "$op" = put ] || cmp -s "$W/g.dat" "$W/src.dat" || { echo "nfs_swing.sh: $who's get differs" >&2; exit 1; }
  local own t
  own=$(echo "$out" | sed -n 's/.* seconds=\([0-9.]*\) .*/\1/p' | head -n1)
  t=$(echo "$out" | sed -n 's/^TIME //p')
  set -- $t
  echo "$i $who $op wall=$(((e - s) / 1000000)) empty=$(((e0 - s0) / 1000000)) own=${own:-na}" \
    "cpu=$(python3 -c "print(round(($1 + $2) * 1000))") faults=$3 vcs=$4 ics=$5" \
    "ganesha_ms=$(((g1 - g0) * 1000 / $(getconf CLK_TCK))) load=$(cut -d' ' -f1 /proc/loadavg)"
}
for ((i = 1; i <= ROUNDS; i++)); do
  order="ours peer"; ((i % 2)) || order="peer ours"
  on_server "cd '$RAM/swing' && cp m.dat g-$i-ours.dat && cp m.dat g-$i-peer.dat && chown '$U:' g-$i-*"
  for who in $order; do run "$who" get "$i"; done
  for who in $order; do run "$who" put "$i"; done
  on_server "rm -f '$RAM'/swing/*-$i-*.dat"
done | tee "$W/runs.txt"
python3 - "$BYTES" "$W/runs.txt" <<'PY'
import re, statistics as st, sys
n, rows = int(sys.argv[1]), []
for line in open(sys.argv[2]):
    i, who, op, *kv = line.split()
    d = dict(x.split("=") for x in kv)
    d.update(i=int(i), who=who, op=op)
    rows.append(d)
def span(v): return f"{st.median(v):.0f} ({min(v):.0f}-{max(v):.0f}, x{max(v) / min(v):.2f})"
for op in ("get", "put"):
    print(f"{op} v3, {n / 1e6:.0f} MB, {max(r['i'] for r in rows)} rounds: median (min-max, max/min)")
    rate = {}
    for who in ("ours", "peer"):
        rs = [r for r in rows if r["op"] == op and r["who"] == who]
        # ours: its own clock; nfs-cp: wall less the empty copy's (its only clock)
        rate[who] = {r["i"]: n / (float(r["own"]) if who == "ours" else
                     max(int(r["wall"]) - int(r["empty"]), 1) / 1e3) / 1e6 for r in rs}
        print(f"  {who:<5} MB/s {span(list(rate[who].values()))}  cpu ms {span([int(r['cpu']) for r in rs])}"
              f"  faults {span([int(r['faults']) for r in rs])}  ics {span([max(int(r['ics']), 1) for r in rs])}"
              f"  ganesha ms {span([max(int(r['ganesha_ms']), 1) for r in rs])}")
    ratio = [rate["ours"][i] / rate["peer"][i] for i in sorted(rate["ours"])]
    print("  ours/nfs-cp per round: " + " ".join(f"{x:.2f}" for x in ratio) + f"  median {st.median(ratio):.3f}")
PY
