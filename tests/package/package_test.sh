#!/usr/bin/env bash
# The .deb as a user gets it: `cpack -G DEB` builds it from BUILD_DIR, `dpkg -i`
# installs it, the installed chokepoint diagnoses local against local with the
# installed quick plan (in a temp dir, its own database), and `dpkg -r`
# removes it leaving no file of it behind. Root (dpkg); exits 77 (skipped)
# otherwise. Usage: package_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
fail() {
  echo "package_test: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || {
  echo "package_test: skipped: dpkg -i needs root"
  exit 77
}
work=$(mktemp -d /tmp/cp-package-XXXXXX)
installed=0
cleanup() {
  if ((installed)); then dpkg -r chokepoint >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# One package name per machine: runs of this test from other trees wait.
exec 9>/run/lock/chokepoint-package-test.lock
flock -w 900 9 || fail "another package test held the lock for 15 minutes"
if dpkg-query -W -f='${Status}' chokepoint 2>/dev/null | grep -q 'ok installed'; then
  fail "a chokepoint package is installed already; remove it first (dpkg -r chokepoint)"
fi
[ ! -e /usr/bin/chokepoint ] || fail "/usr/bin/chokepoint exists outside a package; remove it"

(cd "$build" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/chokepoint_*.deb)

# Depends: Debian 12's runtime libraries, never a -dev package.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for p in libssh-4 libsqlite3-0 libfmt9 libcurl4 libsmbclient libnfs13 libboost-json1.81.0 \
  libboost-program-options1.81.0; do
  grep -qE "(^|, )$p( |,|$)" <<<"$depends" || fail "Depends lacks $p"
done
if grep -qE -- '-dev( |,|$)' <<<"$depends"; then fail "Depends names a -dev package"; fi

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$work/files"
for f in /usr/bin/chokepoint /usr/libexec/chokepoint/chokepoint-agent \
  "/usr/libexec/chokepoint/chokepoint-agent-server-$(uname -m)" \
  /usr/share/man/man1/chokepoint.1 /usr/share/bash-completion/completions/chokepoint \
  /usr/share/doc/chokepoint/quick.ini /usr/share/doc/chokepoint/plan.ini; do
  grep -qx "$f" "$work/files" || fail "the package lacks $f"
done

# dpkg -i, waiting while another dpkg or apt holds its lock.
for _ in $(seq 60); do
  if dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
    installed=1
    break
  fi
  grep -qi 'lock' "$work/dpkg.log" || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
  sleep 5
done
((installed)) || fail "dpkg stayed locked for 5 minutes"

# The installed binary alone: no build tree on its way, agents from
# /usr/libexec/chokepoint.
cp /usr/share/doc/chokepoint/quick.ini "$work/quick.ini"
rc=0
(cd "$work" && env -u CHOKEPOINT_AGENT -u CHOKEPOINT_AGENT_DIR HOME="$work" \
  XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state" \
  /usr/bin/chokepoint diagnose --server local --client local --plan "$work/quick.ini" \
  --db "$work/runs.db" --label package -q >"$work/report.txt" 2>"$work/diagnose.err") || rc=$?
[ "$rc" = 0 ] || { cat "$work/diagnose.err"; fail "installed chokepoint diagnose exited $rc"; }
/usr/bin/chokepoint history --db "$work/runs.db" --json >"$work/history.json"
status=$(/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["runs"]; print(len(r), r[0]["status"], r[0]["label"])' <"$work/history.json")
[ "$status" = "1 complete package" ] || fail "stored runs: $status (want one complete run labelled package)"

# dpkg -r leaves no file of the package.
dpkg -r chokepoint >"$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log"; fail "dpkg -r failed"; }
installed=0
left=()
while IFS= read -r f; do
  [ -d "$f" ] && [ ! -L "$f" ] && continue  # shared directories (/usr/bin) stay
  [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <"$work/files"
for d in /usr/libexec/chokepoint /usr/share/doc/chokepoint; do
  [ -e "$d" ] && left+=("$d")
done
((${#left[@]} == 0)) || fail "left after dpkg -r: ${left[*]}"
echo "package_test: installed, ran, removed; nothing left"
