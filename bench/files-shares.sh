#!/usr/bin/env bash
# Small files over a share: chokepoint's small-file pass (bench/transfer_bench
# `files`: the pass the client agent's files_share runs, here with one
# directory and one operation in flight, as a copy tool keeps) beside the
# real clients copying the same number of files of the same size to and from
# the same lab share (the server's RAM share), in the same rounds, taking
# turns first:
#   smb create  vs  smbclient -c 'prompt; mput *'   (a fresh directory)
#   smb read    vs  smbclient -c 'prompt; mget *'
#   ftp create  vs  curl -T "{f000000,...}"         (one process, one control
#                                                   connection, a file after another)
#   ftp read    vs  curl "ftp://.../f[000000-N]"
# Figures are files per second. Ours: the phase's own clock (transfer_bench
# prints each phase's operations and seconds, login left out). The peers:
# the whole command's wall time less that of the same command with no file
# (start, login, the directory: what no file costs; curl's moves one file, so
# its figure counts the others). Ratio ours/peer (the
# issue's target: >= 0.9). NFS is left out: nfs-cp copies one file per
# process (a mount each), which is no peer of a pass.
# Every transfer runs inside the lab's client host (ip netns exec).
#
# Usage (root): bench/files-shares.sh [--runs 5] [--count 500] [--size 4KiB]
# The lab is $CHOKEPOINT_LAB_INSTANCE's (default 0); one that is not up is
# brought up unshaped (--rate 0) and taken down after.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=5
COUNT=500
SIZE=4KiB
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    *) echo "usage: bench/files-shares.sh [--runs N] [--count N] [--size S]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "files-shares.sh: run as root (the lab's namespaces)" >&2; exit 2; }
CP=build/bin/chokepoint
TB=build/bin/transfer_bench
[ -x "$CP" ] && [ -x "$TB" ] || { echo "files-shares.sh: build first (scripts/build.sh)" >&2; exit 2; }
BYTES=$(python3 -c "
import re,sys; m=re.fullmatch(r'(\d+)(|KB|KiB)', sys.argv[1])
print(int(m.group(1)) * {'':1,'KB':1000,'KiB':1024}[m.group(2)])" "$SIZE")

WORK=$(mktemp -d /dev/shm/chokepoint-files-shares.XXXXXX)
chmod 700 "$WORK"
WAS_UP=1
$CP lab status --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["up"] else 1)' || WAS_UP=0
cleanup() {
  rm -rf "$WORK"
  [ "$WAS_UP" = 1 ] || $CP lab down >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ "$WAS_UP" = 1 ] || $CP lab up --rate 0 >/dev/null

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ST=$($CP lab status --json)
SSHD=$(echo "$ST" | field 'd["server"]["sshd_pid"]')
CLIENT_NS=$(echo "$ST" | field 'd["client"]["netns"]')
ADDR=$(echo "$ST" | field 'd["server"]["data_address"]')
RAM=$(echo "$ST" | field 'next(s["server_dir"] for s in d["servers"]["shares"] if s["medium"]=="ram")')
USER_=$(echo "$ST" | field 'd["servers"]["share_user"]')
PWFILE=$(echo "$ST" | field 'd["servers"]["share_password_file"]')
PW=$(head -n1 "$PWFILE")
# Credentials for the peers in 0600 files, never on a command line.
(umask 077
 printf 'user = "%s:%s"\n' "$USER_" "$PW" > "$WORK/curl.cfg"
 printf 'username = %s\npassword = %s\n' "$USER_" "$PW" > "$WORK/smb.auth")
on_server() { nsenter -t "$SSHD" -m -- sh -c "$1"; }
in_client() { ip netns exec "$CLIENT_NS" "$@"; }
on_server "rm -rf '$RAM/bench-files' && mkdir -p '$RAM/bench-files' && chown '$USER_:' '$RAM/bench-files'"

# The tree the peers copy: COUNT files of SIZE, named as the pass names them.
mkdir -p "$WORK/src" "$WORK/empty"
NAMES=()
for ((i = 0; i < COUNT; i++)); do
  n=$(printf 'f%06d' "$i")
  NAMES+=("$n")
  head -c "$BYTES" /dev/urandom > "$WORK/src/$n"
done
LAST=$(printf '%06d' $((COUNT - 1)))
GLOB="{$(IFS=,; echo "${NAMES[*]}")}"

ns() { date +%s%N; }
# wall SECONDS of a command run in the client host
wall() { local t0; t0=$(ns); in_client "$@" >/dev/null 2>&1; echo "$(( $(ns) - t0 ))"; }
# per_s FULL_NS EMPTY_NS [FILES]: files per second of the files FULL moved beyond EMPTY's
per_s() { python3 -c "import sys; full,empty,n=map(float,sys.argv[1:]); print('%.1f' % (n / max((full-empty)/1e9, 1e-9)))" "$1" "$2" "${3:-$COUNT}"; }

declare -A OURS=() PEER=()
smb() { in_client smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "$1"; }
for ((r = 1; r <= RUNS; r++)); do
  for proto in smb ftp; do
    # ours: a pass of its own in a fresh root
    ours() {
      in_client "$TB" --driver "$proto" --url "$proto://$ADDR/ram" --user "$USER_" \
        --password-file "$PWFILE" files "bench-files/ours-$r" "$COUNT" "$BYTES"
    }
    peer() {
      local d="bench-files/peer-$proto-$r" e="bench-files/empty-$proto-$r"
      rm -rf "$WORK/out" && mkdir -p "$WORK/out"
      if [ "$proto" = smb ]; then
        local ce cf re rf
        ce=$(wall smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "mkdir $e; cd $e; lcd $WORK/empty; prompt; mput *")
        cf=$(wall smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "mkdir $d; cd $d; lcd $WORK/src; prompt; mput *")
        re=$(wall smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "cd $e; lcd $WORK/out; prompt; mget *")
        rf=$(wall smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "cd $d; lcd $WORK/out; prompt; mget *")
      else
        local ce cf re rf
        ce=$(wall curl -s -K "$WORK/curl.cfg" --ftp-create-dirs -T "$WORK/src/f000000" "ftp://$ADDR/ram/$e/")
        cf=$(cd "$WORK/src" && wall curl -s -K "$WORK/curl.cfg" --ftp-create-dirs -T "$GLOB" "ftp://$ADDR/ram/$d/")
        re=$(wall curl -s -K "$WORK/curl.cfg" -o "$WORK/out/one" "ftp://$ADDR/ram/$e/f000000")
        rf=$(wall curl -s -K "$WORK/curl.cfg" -o "$WORK/out/#1" "ftp://$ADDR/ram/$d/f[000000-$LAST]")
      fi
      [ "$(ls "$WORK/out" | wc -l)" -ge "$COUNT" ] || echo "files-shares.sh: the $proto peer read $(ls "$WORK/out" | wc -l) of $COUNT files" >&2
      # FTP's baseline moved one file (curl needs one to log in and make the directory).
      local n=$COUNT
      [ "$proto" = ftp ] && n=$((COUNT - 1))
      echo "$(per_s "$cf" "$ce" "$n") $(per_s "$rf" "$re" "$n")"
    }
    if (( r % 2 )); then o=$(ours); p=$(peer); else p=$(peer); o=$(ours); fi
    oc=$(echo "$o" | sed -n 's/.*create_per_s=\([0-9.]*\).*/\1/p')
    orr=$(echo "$o" | sed -n 's/.*read_per_s=\([0-9.]*\).*/\1/p')
    OURS[$proto-create]+=" $oc"; OURS[$proto-read]+=" $orr"
    PEER[$proto-create]+=" ${p% *}"; PEER[$proto-read]+=" ${p#* }"
    printf 'round %d %s: create ours %s peer %s; read ours %s peer %s (files/s)\n' \
      "$r" "$proto" "$oc" "${p% *}" "$orr" "${p#* }"
    on_server "rm -rf '$RAM/bench-files'/*"
  done
done

echo
echo "medians over $RUNS rounds, $COUNT files of $SIZE, files/s (ratio = ours / peer)"
printf '  %-11s %-22s %9s %9s %6s\n' row peer ours peer ratio
for key in smb-create smb-read ftp-create ftp-read; do
  case $key in
    smb-create) peer="smbclient mput" ;; smb-read) peer="smbclient mget" ;;
    ftp-create) peer="curl -T {glob}" ;; ftp-read) peer="curl [range]" ;;
  esac
  python3 - "$key" "$peer" "${OURS[$key]}" "${PEER[$key]}" <<'PY'
import statistics, sys
key, peer, o, p = sys.argv[1], sys.argv[2], [float(v) for v in sys.argv[3].split()], [float(v) for v in sys.argv[4].split()]
mo, mp = statistics.median(o), statistics.median(p)
print(f"  {key:<11} {peer:<22} {mo:9.1f} {mp:9.1f} {mo / mp:6.3f}")
PY
done
