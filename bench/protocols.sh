#!/usr/bin/env bash
# Protocol benchmark: chokepoint's ftp, smb and nfs drivers (bench/transfer_bench,
# which moves a file exactly as the client agent does) beside the peer tools
# on the same lab, the same file content and the same share, in one run:
#   ftp get/put   vs  curl (passive, binary)
#   smb get/put   vs  smbclient -c 'get ...' / -c 'put ...'
#   nfs get/put   vs  libnfs's own nfs-cp (NFSv4 get, NFSv3 get and put; nfs-cp
#                     cannot put over NFSv4 with libnfs 4.0, so our nfs put v4
#                     takes its turns against nfs-cp's NFSv3 put)
# Every transfer runs inside the lab's client host (ip netns exec <its netns>)
# between a tmpfs file on this machine and the server's tmpfs share, with a
# fresh file name each time (no server cache can answer for a repeat). Two
# figures per transfer, medians of --runs runs, ours and the peer alternating
# first, as MB/s with ratios ours/peer (target >= 0.95):
#   transfer: each tool's own clock (ours: transfer_bench's, open to close
#     of the remote file, what the agent times per sample; smbclient: the
#     rate its get/put prints, open to close as well (Samba's do_get/do_put
#     time cli_open .. cli_close); curl: time_total minus time_pretransfer,
#     which starts after RETR/STOR's reply, so curl's CWD/EPSV/TYPE/SIZE/
#     RETR round trips are left out while ours are in: not the same interval);
#   outside: every tool timed the same way from outside, its wall time less
#     that of the same command on an empty file run just before it (start,
#     login, open, close: what an empty file costs), so the same interval for
#     all (the data and what a byte more costs), at the price of more noise;
#     nfs-cp prints no rate, so its transfer figure is this one (and our
#     nfs rows get this figure too: like with like, without the open's and
#     close's round trips, which ours counts and nfs-cp's does not);
#   command: the whole command's wall time (process start, login, transfer,
#     exit). Ours loads libsmbclient, libcurl and OpenSSL at every start,
#     which the agent does once, so this row flatters the peers.
# The lab is $CHOKEPOINT_LAB_INSTANCE's (default 0).
#
# Every round is printed (ours, peer, ratio), then per transfer the medians,
# the ratio of the medians, the spread of the per-round ratios (min-max) and
# what our driver kept in flight (in_flight_bytes, from its properties).
#
# RTT axis: --delays "0 1ms 5ms" brings the lab up with `--delay D` for each
# D (0 = none): the lab's delay line, D each way (5ms = a 10 ms round trip).
# A lab that refuses a delay is reported as such and that delay is skipped;
# the others still run. The lab instance is the environment's
# ($CHOKEPOINT_LAB_INSTANCE, else 0), its client namespace from `lab status`.
#
# --smb-base k=v (repeatable): a second configuration of our smb driver (e.g.
# connections=1 for the one-connection default before connections=auto) run
# in the same rounds, ours, base and peer taking turns first, reported as its
# own rows (smb-get-base ...) against the same smbclient runs.
# --base-bench PATH: the base rows run this transfer_bench binary instead (a
# build of an earlier commit: before/after in the same rounds), for ftp too.
# Our rows also give transfer_bench's peak RSS (KiB): its own and its largest
# helper's. Our gets pass --size-hint (the file's size, as the orchestrator
# tells the client agent) when the binary takes it. --no-nfs leaves the nfs
# rows out.
#
# AFP (no AFP server package exists for Debian 12): bench/afp_test_peer (the
# project's AFP test server, in a process of its own, with a delay line of
# --afp-delay per reply) on loopback, and our afp driver reading and writing
# through it at each of --afp-depths, with what it kept in flight and the
# ceiling that implies (in_flight_bytes / delay). There is no peer tool here.
#
# Usage (root): bench/protocols.sh [--runs 7] [--size 100MB] [--rates "1gbit 0"]
#   [--delays "0"] [--afp-delay 5ms] [--afp-depths "1 2 4 8 16 32"] [--no-afp] [--no-lab]
#   [--smb-option k=v]...   (our smb driver's share options, e.g. connections=2, io_size=8MiB)
#   [--smb-base k=v]...     (a second configuration of it in the same rounds)
#   [--base-bench PATH] [--no-nfs]
#   [--nfs-option k=v]...   (our nfs driver's share options, e.g. depth=1)
#   [--protocols "ftp smb nfs afp"]   (which rows run; --no-nfs / --no-afp take one out)
# CHOKEPOINT_TRANSFER_BENCH: another build's transfer_bench as "ours" (a before/after).
# ("0" = unshaped). A lab that was up is retuned to each rate and put back at
# its own rate afterwards; one that was not is brought up and taken down.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
RUNS=7
SIZE=100MB
RATES="1gbit 0"
DELAYS="0"
AFP_DELAY=5ms
AFP_DEPTHS="1 2 4 8 16 32"
DO_AFP=1
DO_LAB=1
SMB_OPTS=()
BASE_OPTS=()
BASE_TB=
DO_NFS=1
NFS_OPTS=()
PROTOCOLS="ftp smb nfs afp"
usage() {
  echo "usage: $0 [--runs N] [--size 100MB] [--rates \"1gbit 0\"] [--delays \"0 2ms 10ms\"]" \
    "[--afp-delay 5ms] [--afp-depths \"1 2 4 8 16 32\"] [--no-afp] [--no-lab]" \
    "[--smb-option connections=2]..." >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --delays) DELAYS=${2//,/ }; shift 2 ;;
    --afp-delay) AFP_DELAY=$2; shift 2 ;;
    --afp-depths) AFP_DEPTHS=${2//,/ }; shift 2 ;;
    --no-afp) DO_AFP=0; shift ;;
    --no-lab) DO_LAB=0; shift ;;
    --smb-option) SMB_OPTS+=(--option "$2"); shift 2 ;;
    --smb-base) BASE_OPTS+=(--option "$2"); shift 2 ;;
    --base-bench) BASE_TB=$(realpath "$2"); shift 2 ;;
    --no-nfs) DO_NFS=0; shift ;;
    --nfs-option) NFS_OPTS+=(--option "$2"); shift 2 ;;
    --protocols) PROTOCOLS=${2//,/ }; shift 2 ;;
    *) usage ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "protocols.sh: needs root (the lab)" >&2; exit 1; }
has() { [[ " $PROTOCOLS " == *" $1 "* ]]; }  # has PROTO: its rows run
has nfs || DO_NFS=0
has afp || DO_AFP=0
cmake --build build -j2 --target chokepoint transfer_bench afp_test_peer >/dev/null
CP=./build/bin/chokepoint
TB=${CHOKEPOINT_TRANSFER_BENCH:-$(pwd)/build/bin/transfer_bench}
[ -n "$BASE_TB" ] || BASE_TB=$TB
HAS_BASE=0
{ ((${#BASE_OPTS[@]})) || [ "$BASE_TB" != "$TB" ]; } && HAS_BASE=1
# --size-hint BYTES for a binary that takes it (an older build does not).
hint_of() { "$1" 2>&1 | grep -q -- --size-hint && echo "--size-hint $BYTES" || true; }
PEER_BIN=$(pwd)/build/bin/afp_test_peer
BYTES=$(python3 -c "
import re,sys; m=re.fullmatch(r'(\d+)(|k|M|G|KB|MB|GB|KiB|MiB|GiB)', sys.argv[1])
u={'':1,'KB':1e3,'MB':1e6,'GB':1e9,'k':1024,'KiB':1024,'M':2**20,'MiB':2**20,'G':2**30,'GiB':2**30}
print(int(int(m.group(1))*u[m.group(2)]))" "$SIZE")

WORK=$(mktemp -d /dev/shm/chokepoint-protocols.XXXXXX)  # tmpfs: the local side costs nothing
chmod 700 "$WORK"
WAS_UP=0
OLD_RATE=
OLD_DELAY=0
[ "$DO_LAB" = 1 ] && if $CP lab status --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["up"] else 1)'; then
  WAS_UP=1
  OLD_RATE=$($CP lab status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["options"]["rate_bits"])')
  OLD_DELAY=$($CP lab status --json | python3 -c 'import json,sys; print("%gms" % (json.load(sys.stdin)["options"]["delay_s"] * 1e3))')
fi
PEER_PID=
cleanup() {
  [ -n "$PEER_PID" ] && kill "$PEER_PID" 2>/dev/null
  rm -rf "$WORK"
  if [ "$WAS_UP" = 1 ]; then
    $CP lab up --rate "${OLD_RATE}bit" --delay "$OLD_DELAY" >/dev/null 2>&1 ||
      $CP lab up --rate 0 >/dev/null 2>&1 || true
  elif [ "$DO_LAB" = 1 ]; then
    $CP lab down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

status() { $CP lab status --json; }

# Medians, ratio, per-round ratios and their spread, for one transfer: by
# each tool's own clock (transfer), from outside (wall less the empty file's),
# and the whole command.
report() {  # report KEY PEER [WHO]: from X/N/T[KEY-WHO] and [KEY-peer], F and R[KEY-WHO] (WHO: ours)
  has "${1%%-*}" || return 0
  local who=${3:-ours}
  python3 - "$BYTES" "$1${3:+-$3}" "$2" "${X[$1-$who]}" "${X[$1-peer]}" "${N[$1-$who]:-}" "${N[$1-peer]:-}" "${T[$1-$who]}" "${T[$1-peer]}" "${F[$1-$who]:-}" "${R[$1-$who]:-}" <<'PY'
import statistics, sys
n, key, peer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
xo, xp, no, np_, to, tp = ([n / float(v) / 1e6 for v in a.split()] for a in sys.argv[4:10])
flight = sorted(set(sys.argv[10].split()), key=int)
rss = [tuple(map(int, v.split("/"))) for v in sys.argv[11].split()]
med = statistics.median
def cols(o, p):
    if not o or not p: return f"{'-':>8} {'-':>8} {'-':>6} {'-':>11}"
    r = [a / b for a, b in zip(o, p)]
    return f"{med(o):8.1f} {med(p):8.1f} {med(o) / med(p):6.3f} {min(r):5.3f}-{max(r):5.3f}"
peak = f"{max(r[0] for r in rss)}/{max(r[1] for r in rss)}" if rss else "-"
print(f"  {key:<13} {peer:<10} {cols(xo, xp)}   {cols(no, np_)}   {med(to) / med(tp):6.3f}"
      f"   {','.join(flight) or '-':>10}   {peak}")
PY
}

for DELAY in $DELAYS; do
[ "$DO_LAB" = 1 ] || break
for RATE in $RATES; do
  LAB_ARGS=(--rate "$RATE")
  [ "$DELAY" = 0 ] || LAB_ARGS+=(--delay "$DELAY")
  if ! LAB_OUT=$($CP lab up "${LAB_ARGS[@]}" 2>&1); then
    echo "protocols.sh: the lab refused '--rate $RATE${DELAY:+ --delay $DELAY}': $(echo "$LAB_OUT" | head -n1)"
    echo "protocols.sh: skipping rate $RATE at delay $DELAY; carrying on with the others"
    continue
  fi
  lab_share_env "$(status)"
  # Credentials for the peers in 0600 files, never on a command line.
  (umask 077
   printf 'user = "%s:%s"\n' "$USER_" "$PW" > "$WORK/curl.cfg"
   printf 'username = %s\npassword = %s\n' "$USER_" "$PW" > "$WORK/smb.auth")

  # One source file; the server gets a copy to serve fresh names from.
  head -c "$BYTES" /dev/urandom > "$WORK/src.dat"
  OURS_HINT=$(hint_of "$TB")
  BASE_HINT=$(hint_of "$BASE_TB")
  on_server "rm -rf '$RAM/bench' && mkdir -p '$RAM/bench' && chown '$USER_:' '$RAM/bench' && cat > '$RAM/bench/master.dat'" < "$WORK/src.dat"
  : > "$WORK/empty.dat"
  on_server "touch '$RAM/bench/empty.dat' && chown '$USER_:' '$RAM/bench/empty.dat'"

  declare -A T=() X=() F=() R=() N=() E=()
  ms() { date +%s%N; }
  empty() {  # empty KEY command...: the same command on an empty file, its wall seconds in E[KEY]
    local key=$1; shift
    local s e
    s=$(ms)
    "$@" >"$WORK/out" 2>"$WORK/err" || { echo "protocols.sh: $key (empty) failed: $(cat "$WORK/err")" >&2; exit 1; }
    e=$(ms)
    E[$key]=$(python3 -c "print(($e-$s)/1e9)")
  }
  timed() {  # timed KEY command...: appends the command's seconds to T[KEY], the transfer's to X[KEY]
    local key=$1; shift
    local s e
    s=$(ms)
    "$@" >"$WORK/out" 2>"$WORK/err" || { echo "protocols.sh: $key failed: $(cat "$WORK/err")" >&2; exit 1; }
    e=$(ms)
    T[$key]+="$(python3 -c "print(($e-$s)/1e9)") "
    # Outside: less the same command on an empty file just before (if run).
    [ -z "${E[$key]:-}" ] || N[$key]+="$(python3 -c "print(max(($e-$s)/1e9-${E[$key]}, 1e-6))") "
    local fl
    fl=$(grep -o ' in_flight_bytes=[0-9]*' "$WORK/out" | cut -d= -f2 || true)
    [ -z "$fl" ] || F[$key]+="$fl "
    local rss
    rss=$(sed -n 's/.* peak_rss_kib=\([0-9]*\) helper_peak_rss_kib=\([0-9]*\).*/\1\/\2/p' "$WORK/out")
    [ -z "$rss" ] || R[$key]+="$rss "
    X[$key]+="$(python3 - "$BYTES" "$WORK/out" "$WORK/err" <<'PY'
import re, sys
n, text = int(sys.argv[1]), open(sys.argv[2]).read() + open(sys.argv[3]).read()
m = re.search(r" seconds=([0-9.]+)", text)            # transfer_bench
if m: print(m.group(1)); sys.exit()
m = re.search(r"CURLTIME ([0-9.]+) ([0-9.]+)", text)  # curl -w
if m: print(float(m.group(2)) - float(m.group(1))); sys.exit()
m = re.search(r"\(([0-9.]+) (?:kb/s|KiloBytes/sec)\)", text)  # smbclient, KiB/s
print(n / (float(m.group(1)) * 1024))
PY
) "
  }
  nfs_url() {  # nfs_url PATH VERSION: an nfs-cp URL with the share user's ids
    echo "nfs://$ADDR/ram/$1?version=$2&uid=$UID_&gid=$GID_"
  }
  timed_nfscp() {  # timed_nfscp KEY SRC DST [EMPTY_SRC EMPTY_DST]: nfs-cp, less an empty copy's time
    local key=$1 s e s0 e0
    s0=$(ms)
    in_client nfs-cp "$4" "$5" >"$WORK/out" 2>"$WORK/err" || { echo "protocols.sh: $key (empty) failed: $(cat "$WORK/err")" >&2; exit 1; }
    e0=$(ms)
    s=$(ms)
    in_client nfs-cp "$2" "$3" >"$WORK/out" 2>"$WORK/err" || { echo "protocols.sh: $key failed: $(cat "$WORK/err")" >&2; exit 1; }
    e=$(ms)
    T[$key]+="$(python3 -c "print(($e-$s)/1e9)") "
    X[$key]+="$(python3 -c "print(max(($e-$s-($e0-$s0))/1e9, 1e-6))") "
    N[$key]+="$(python3 -c "print(max(($e-$s-($e0-$s0))/1e9, 1e-6))") "  # its own clock is this one
  }
  check_puts() {  # check_puts "NAMES": what arrived on the server is the source; then the round's files go
    local want got f
    want=$(sha256sum < "$WORK/src.dat" | cut -d' ' -f1)
    for f in $1; do
      case $f in fp-*) has ftp || continue ;; sp-*) has smb || continue ;; esac
      got=$(on_server "sha256sum < '$RAM/bench/$f.dat'" | cut -d' ' -f1)
      [ "$got" = "$want" ] || { echo "protocols.sh: $f.dat on the server differs from the source" >&2; exit 1; }
    done
    on_server "rm -f '$RAM'/bench/*-$i.dat"
  }
  check() {  # check FILE: the download arrived intact
    cmp -s "$1" "$WORK/src.dat" || { echo "protocols.sh: $1 differs from the source" >&2; exit 1; }
    rm -f "$1"
  }

  # One transfer by one tool: the same command on an empty file first (for
  # the outside figure), then on the round's file.
  # xfer PROTO OP WHO FILE (ftp|smb, get|put, ours|base|peer, the remote name)
  xfer() {
    has "$1" || return 0
    local proto=$1 op=$2 who=$3 f=$4 key=$1-$2-$3
    local tb=$TB hint=$OURS_HINT opts=()
    if [ "$who" = base ]; then tb=$BASE_TB hint=$BASE_HINT; fi
    if [ "$proto" = smb ]; then
      if [ "$who" = ours ]; then opts=("${SMB_OPTS[@]}"); elif [ "$who" = base ]; then opts=("${BASE_OPTS[@]}"); fi
    fi
    local ours=(in_client "$tb" --driver "$proto" --url "$proto://$ADDR/ram" --user "$USER_" --password-file "$PWFILE" "${opts[@]}")
    local cw=(-w 'CURLTIME %{time_pretransfer} %{time_total}\n')
    # The empty file's transfer (e_) and the round's (x_): curl's arguments,
    # smbclient's command and ours.
    local e_ftp x_ftp e_smb x_smb e_ours x_ours
    if [ "$op" = get ]; then
      rm -f "$WORK/e.dat"
      e_ftp=(-o "$WORK/e.dat" "ftp://$ADDR/ram/bench/empty.dat") x_ftp=(-o "$WORK/$f" "ftp://$ADDR/ram/bench/$f")
      e_smb="get bench/empty.dat $WORK/e.dat" x_smb="get bench/$f $WORK/$f"
      # shellcheck disable=SC2206  # $hint: none or two words
      e_ours=(get bench/empty.dat "$WORK/e.dat") x_ours=($hint get "bench/$f" "$WORK/$f")
    else
      e_ftp=(-T "$WORK/empty.dat" "ftp://$ADDR/ram/bench/e-$f") x_ftp=(-T "$WORK/src.dat" "ftp://$ADDR/ram/bench/$f")
      e_smb="put $WORK/empty.dat bench/e-$f" x_smb="put $WORK/src.dat bench/$f"
      e_ours=(put "$WORK/empty.dat" "bench/e-$f") x_ours=(put "$WORK/src.dat" "bench/$f")
    fi
    if [ "$who" = peer ] && [ "$proto" = ftp ]; then
      empty "$key" in_client curl -sS --fail -K "$WORK/curl.cfg" "${e_ftp[@]}"
      timed "$key" in_client curl -sS --fail -K "$WORK/curl.cfg" "${cw[@]}" "${x_ftp[@]}"
    elif [ "$who" = peer ]; then
      empty "$key" in_client smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "$e_smb"
      timed "$key" in_client smbclient "//$ADDR/ram" -A "$WORK/smb.auth" -c "$x_smb"
    else
      empty "$key" "${ours[@]}" "${e_ours[@]}"
      timed "$key" "${ours[@]}" "${x_ours[@]}"
    fi
    [ "$op" = put ] || check "$WORK/$f"
  }

  LOADS=
  for ((i = 1; i <= RUNS; i++)); do
    LOADS+="$(cut -d' ' -f1 /proc/loadavg) "  # each round's 1-minute load average at its start
    order="ours peer"; ((i % 2)) || order="peer ours"
    if [ "$HAS_BASE" = 1 ]; then  # three take turns first
      case $((i % 3)) in 1) order="ours base peer" ;; 2) order="base peer ours" ;; 0) order="peer ours base" ;; esac
    fi
    ftp_order=$order
    [ "$BASE_TB" != "$TB" ] || ftp_order=$(echo "$order" | sed 's/ *base//')  # base differs in smb options only
    for who in $order; do on_server "cp '$RAM/bench/master.dat' '$RAM/bench/g-$who-$i.dat' && cp '$RAM/bench/master.dat' '$RAM/bench/s-$who-$i.dat'"; done
    for who in $ftp_order; do xfer ftp get "$who" "g-$who-$i.dat"; done
    for who in $order; do xfer smb get "$who" "s-$who-$i.dat"; done
    for who in $ftp_order; do xfer ftp put "$who" "fp-$who-$i.dat"; done
    for who in $order; do xfer smb put "$who" "sp-$who-$i.dat"; done
    put_files=
    for who in $ftp_order; do put_files+=" fp-$who-$i"; done
    for who in $order; do put_files+=" sp-$who-$i"; done
    [ "$DO_NFS" = 1 ] || { check_puts "$put_files"; continue; }
    # nfs: get over NFSv4 and NFSv3, put over NFSv3 (and ours over NFSv4).
    nfs_order=$(echo "$order" | sed 's/ *base//')
    for v in 4 3; do
      for who in ours peer; do on_server "cp '$RAM/bench/master.dat' '$RAM/bench/n$v-$who-$i.dat' && chown '$USER_:' '$RAM/bench/n$v-$who-$i.dat'"; done
      for who in $nfs_order; do
        f=n$v-$who-$i.dat
        if [ $who = ours ]; then
          rm -f "$WORK/e-$i.dat"
          empty nfs-get-v$v-ours in_client "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$USER_" --option version=$v "${NFS_OPTS[@]}" get bench/empty.dat "$WORK/e-$i.dat"
          timed nfs-get-v$v-ours in_client "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$USER_" --option version=$v "${NFS_OPTS[@]}" get "bench/$f" "$WORK/$f"
        else
          rm -f "$WORK/e-$i.dat"
          timed_nfscp nfs-get-v$v-peer "$(nfs_url "bench/$f" $v)" "$WORK/$f" "$(nfs_url bench/empty.dat $v)" "$WORK/e-$i.dat"
        fi
        check "$WORK/$f"
      done
    done
    # Puts: ours over NFSv3 and NFSv4 take turns with nfs-cp's NFSv3 put
    # (the peer for both rows: nfs-cp cannot put over NFSv4).
    nput_order="ours4 ours3 peer"; ((i % 2)) || nput_order="peer ours3 ours4"
    for who in $nput_order; do
      case $who in
        ours3 | ours4)
          v=${who#ours}
          empty nfs-put-v$v-ours in_client "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$USER_" --option version=$v "${NFS_OPTS[@]}" put "$WORK/empty.dat" "bench/eo$v-$i.dat"
          timed nfs-put-v$v-ours in_client "$TB" --driver nfs --url "nfs://$ADDR/ram" --user "$USER_" --option version=$v "${NFS_OPTS[@]}" put "$WORK/src.dat" "bench/np$v-ours-$i.dat" ;;
        peer)
          timed_nfscp nfs-put-v3-peer "$WORK/src.dat" "$(nfs_url "bench/np3-peer-$i.dat" 3)" "$WORK/empty.dat" "$(nfs_url "bench/e-$i.dat" 3)" ;;
      esac
    done
    X[nfs-put-v4-peer]=${X[nfs-put-v3-peer]}
    T[nfs-put-v4-peer]=${T[nfs-put-v3-peer]}
    N[nfs-put-v4-peer]=${N[nfs-put-v3-peer]}
    check_puts "$put_files np3-ours-$i np3-peer-$i np4-ours-$i"
  done
  on_server "rm -rf '$RAM/bench'"

  label=$([ "$RATE" = 0 ] && echo unshaped || echo "$RATE")
  dlabel=$([ "$DELAY" = 0 ] && echo "no delay" || echo "delay $DELAY")
  echo "lab data link $label, $dlabel, $SIZE files, $RUNS runs each (MB/s):"
  echo "  per round, ours/peer = ratio (transfer: each tool's clock; outside: wall less the empty file's):"
  rows="ftp-get:ours ftp-put:ours smb-get:ours smb-put:ours"
  [ "$DO_NFS" = 1 ] && rows+=" nfs-get-v4:ours nfs-get-v3:ours nfs-put-v3:ours nfs-put-v4:ours"
  [ "$HAS_BASE" = 1 ] && rows+=" smb-get:base smb-put:base"
  [ "$BASE_TB" != "$TB" ] && rows+=" ftp-get:base ftp-put:base"
  for kw in $rows; do
    k=${kw%:*} w=${kw#*:}
    has "${k%%-*}" || continue
    python3 - "$BYTES" "$k$([ "$w" = base ] && echo -base)" "${X[$k-$w]}" "${X[$k-peer]}" "${N[$k-$w]:-}" "${N[$k-peer]:-}" <<'PY'
import sys
n, key = int(sys.argv[1]), sys.argv[2]
xo, xp, no, np_ = ([n / float(v) / 1e6 for v in a.split()] for a in sys.argv[3:7])
print(f"    {key:<13} transfer " + " ".join(f"{o:.0f}/{p:.0f}={o / p:.2f}" for o, p in zip(xo, xp)))
if no and np_:
    print(f"    {'':<13} outside  " + " ".join(f"{o:.0f}/{p:.0f}={o / p:.2f}" for o, p in zip(no, np_)))
PY
  done
  printf '  %-13s %-10s %-37s   %-37s   %6s   %10s   %s\n' "" "" "transfer (each tool's clock)" "outside (wall - empty file's)" command "" ""
  printf '  %-13s %-10s %8s %8s %6s %11s   %8s %8s %6s %11s   %6s   %10s   %s\n' what peer ours peer ratio "round range" ours peer ratio "round range" ratio in_flight "peak RSS KiB own/helper"
  report ftp-get curl
  report ftp-put curl
  report smb-get smbclient
  report smb-put smbclient
  if [ "$DO_NFS" = 1 ]; then
    report nfs-get-v4 nfs-cp
    report nfs-get-v3 nfs-cp
    report nfs-put-v3 nfs-cp
    report nfs-put-v4 "nfs-cp v3"
  fi
  if [ "$HAS_BASE" = 1 ]; then
    report smb-get smbclient base
    report smb-put smbclient base
  fi
  if [ "$BASE_TB" != "$TB" ]; then
    report ftp-get curl base
    report ftp-put curl base
  fi
  echo "  load average at each round's start: $LOADS; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  unset T X F R N E
done
done

# AFP at each depth through the test peer's delay line (loopback).
if [ "$DO_AFP" = 1 ]; then
  AFP_MS=$(python3 -c "
import re,sys; m=re.fullmatch(r'([0-9.]+)(ms|s|us|)', sys.argv[1])
print(float(m.group(1)) * {'ms':1,'s':1000,'us':0.001,'':1}[m.group(2)])" "$AFP_DELAY")
  mkdir -p "$WORK/afpvol"
  head -c "$BYTES" /dev/urandom > "$WORK/afpvol/src.dat"
  cp "$WORK/afpvol/src.dat" "$WORK/src-afp.dat"
  printf 'bench\n' > "$WORK/afp.pw"
  # The peer runs until its standard input (our end of the coprocess) closes.
  coproc PEERP { "$PEER_BIN" --dir "$WORK/afpvol" --delay-ms "$AFP_MS"; }
  PEER_PID=$PEERP_PID
  read -r -t 10 -u "${PEERP[0]}" line || { echo "protocols.sh: afp_test_peer did not start" >&2; exit 1; }
  PORT=${line#port=}
  URL="afp://bench@127.0.0.1:$PORT/vol"
  echo "afp through the test peer on loopback, reply delay $AFP_DELAY, $SIZE files, $RUNS runs each (MB/s):"
  printf '  %-6s %-4s %10s %11s %16s %12s %14s\n' depth op median "min-max" in_flight_bytes "ceiling" "client CPU s"
  for depth in $AFP_DEPTHS; do
    for op in get put; do
      rates=() flight= cpu=()
      for ((i = 1; i <= RUNS; i++)); do
        if [ $op = get ]; then
          "$TB" --driver afp --url "$URL" --password-file "$WORK/afp.pw" --option depth="$depth" \
            get src.dat "$WORK/afp-got.dat" > "$WORK/out"
          cmp -s "$WORK/afp-got.dat" "$WORK/src-afp.dat" || { echo "protocols.sh: afp get differs" >&2; exit 1; }
        else
          "$TB" --driver afp --url "$URL" --password-file "$WORK/afp.pw" --option depth="$depth" \
            put "$WORK/src-afp.dat" put.dat > "$WORK/out"
          cmp -s "$WORK/afpvol/put.dat" "$WORK/src-afp.dat" || { echo "protocols.sh: afp put differs" >&2; exit 1; }
        fi
        rates+=("$(sed -n 's/.* mbps=\([0-9.]*\).*/\1/p' "$WORK/out")")
        cpu+=("$(sed -n 's/.* cpu_seconds=\([0-9.]*\).*/\1/p' "$WORK/out")")
        flight=$(sed -n 's/.* in_flight_bytes=\([0-9]*\).*/\1/p' "$WORK/out")
      done
      python3 - "$depth" "$op" "$flight" "$AFP_MS" "${rates[*]}" "${cpu[*]}" <<'PY'
import statistics, sys
depth, op, flight, ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
r = [float(v) for v in sys.argv[5].split()]
c = [float(v) for v in sys.argv[6].split()]
ceiling = f"{flight / (ms / 1000) / 1e6:.0f} MB/s" if ms > 0 else "-"
print(f"  {depth:<6} {op:<4} {statistics.median(r):10.1f} {min(r):5.0f}-{max(r):5.0f} "
      f"{flight:16d} {ceiling:>12} {statistics.median(c):14.3f}")
PY
    done
  done
  kill "$PEER_PID" 2>/dev/null; wait "$PEER_PID" 2>/dev/null || true
  PEER_PID=
fi
