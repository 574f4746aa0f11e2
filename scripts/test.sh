#!/usr/bin/env bash
# Installs, builds, and runs every test: unit tests, then the integration
# tests (which bring up the two-host lab as root and take it down again),
# then the security suite,
# then the AFP decoder's fuzz target for a minute.
#
# A suite that runs no test fails (ctest --no-tests=error). After each suite
# this prints how many tests were skipped and why; as root (CI) a skipped
# test fails the run, since everything a test needs is there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build

# run_suite LABEL [ctest options...]: runs one label's tests, the full
# output in ctest-LABEL.log, the per-test lines on the terminal.
run_suite() {
  local label=$1
  shift
  local log="ctest-$label.log" rc=0
  ctest -L "$label" --no-tests=error -V "$@" >"$log" 2>&1 || rc=$?
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|No tests were found' "$log" || true
  # Skipped tests: gtest's own lines under -V ("12: [  SKIPPED ] Suite.Name (0 ms)")
  # and ctest's "did not run" list ("	184 - Suite.Name (Skipped)").
  local names skipped
  # (grep finds nothing in a clean run: that is no failure here.)
  names=$({
    grep -oE '^[0-9]+: \[  SKIPPED \] [^ ]+ \([0-9]+ ms\)' "$log" | awk '{print $5}' || true
    grep -oE '^\s+[0-9]+ - [^ ]+ \((Skipped|Not Run|Disabled)\)' "$log" | awk '{print $3}' || true
  } | sort -u)
  skipped=$(printf '%s' "$names" | grep -c . || true)
  echo "$label: $skipped test(s) skipped"
  if [ "$skipped" -gt 0 ]; then
    printf '%s\n' "$names" | sed 's/^/  /'
    echo "  why:"
    # The line after gtest's "file:line: Skipped" holds the reason.
    grep -A1 -E '^[0-9]+: .*: Skipped$' "$log" | grep -vE ': Skipped$|^--$' |
      sed 's/^[0-9]*: /    /' | sort | uniq -c
  fi
  if [ "$rc" -ne 0 ]; then
    # Each failed test's own output, from the log (never a rerun: with no
    # failure recorded, `ctest --rerun-failed` would run every suite).
    local n
    for n in $(grep -oE 'Test +#[0-9]+: [^ ]+ \.+\*+(Failed|Timeout|Exception)' "$log" |
      sed -E 's/Test +#([0-9]+):.*/\1/'); do
      echo "---- output of test #$n"
      grep -E "^$n: " "$log" | sed "s/^$n: //"
    done
    echo "$label: failed (exit $rc; full output in build/$log)" >&2
    return "$rc"
  fi
  if [ "$(id -u)" = 0 ] && [ "$skipped" -gt 0 ]; then
    echo "$label: running as root, no test may skip (CI runs as root)" >&2
    return 1
  fi
}

run_suite unit -LE security -j2 --timeout 300
run_suite integration -LE security
# The attacker's cases (suites named Security*: a hostile local user, a hostile
# peer, planted files, foreign databases), unit and lab ones: `ctest -L security`.
run_suite security --timeout 900
cd ..
# The AFP reply decoder under libFuzzer + ASan/UBSan, for a bounded time.
bash scripts/fuzz-afp.sh 60
