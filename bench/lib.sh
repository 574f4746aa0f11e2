# Shell functions the bench scripts share (sourced, not run):
#   source "$(dirname "$0")/lib.sh"   (from bench/), or bench/lib.sh from the repo root.

# parse_options SPEC USAGE "$@": SPEC holds pairs "--flag VAR" (--flag VALUE
# sets VAR to VALUE) and "--flag VAR=VALUE" (--flag alone sets VAR to VALUE).
# Any other word prints "usage: USAGE" and exits 2.
parse_options() {
  local -a spec
  read -r -d "" -a spec <<<"$1" || true  # every word, over lines too
  local usage=$2 i var
  shift 2
  while (($#)); do
    for ((i = 0; i < ${#spec[@]}; i += 2)); do [ "${spec[i]}" = "$1" ] && break; done
    if ((i >= ${#spec[@]})); then echo "usage: $usage" >&2; exit 2; fi
    var=${spec[i + 1]}
    if [[ $var == *=* ]]; then
      printf -v "${var%%=*}" '%s' "${var#*=}"
      shift
    else
      (($# >= 2)) || { echo "usage: $usage" >&2; exit 2; }
      printf -v "$var" '%s' "$2"
      shift 2
    fi
  done
}

# field EXPR: EXPR (Python, over the document as d) of the JSON on stdin.
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# lab_vars STATUS_JSON NAME=EXPR...: sets each NAME to EXPR (Python, over
# the document as d) of STATUS_JSON (`chokepoint lab status --json`).
lab_vars() {
  local a v
  for a in "${@:2}"; do
    v=$(echo "$1" | field "${a#*=}") || return
    printf -v "${a%%=*}" '%s' "$v"
  done
}

# lab_up_unless_up CLEANUP: brings the lab ($CHOKEPOINT_LAB_INSTANCE's, through
# $CP) up unshaped (--rate 0) unless it is up already, and sets the EXIT trap:
# the script's CLEANUP (a command), then `lab down` of a lab it brought up.
lab_up_unless_up() {
  WAS_UP=1
  $CP lab status --json | field 'd["up"] or sys.exit(1)' >/dev/null || WAS_UP=0
  LAB_CLEANUP=$1
  trap '$LAB_CLEANUP; [ "$WAS_UP" = 1 ] || $CP lab down >/dev/null 2>&1 || true' EXIT
  [ "$WAS_UP" = 1 ] || $CP lab up --rate 0 >/dev/null
}

# lab_share_env STATUS_JSON: the lab's names a share benchmark needs: SSHD
# (the server's sshd pid, for its mount namespace), CLIENT_NS (cp-client[-N]:
# the instance's), ADDR (the server's data address), RAM (the RAM share's
# directory on the server), USER_ with UID_ and GID_, PWFILE and PW (the share
# user's password file and password).
lab_share_env() {
  lab_vars "$1" SSHD='d["server"]["sshd_pid"]' CLIENT_NS='d["client"]["netns"]' \
    ADDR='d["server"]["data_address"]' USER_='d["servers"]["share_user"]' \
    RAM='next(s["server_dir"] for s in d["servers"]["shares"] if s["medium"]=="ram")' \
    PWFILE='d["servers"]["share_password_file"]'
  PW=$(head -n1 "$PWFILE")
  UID_=$(id -u "$USER_")
  GID_=$(id -g "$USER_")
}

# on_server SCRIPT: sh -c SCRIPT in the lab server's mount namespace ($SSHD's).
on_server() { nsenter -t "$SSHD" -m -- sh -c "$1"; }
# in_client COMMAND...: COMMAND in the lab client's network namespace.
in_client() { ip netns exec "$CLIENT_NS" "$@"; }
