#!/usr/bin/env bash
# Installs, builds, and runs every test: unit tests, then the integration
# tests (which bring up the two-host lab as root and take it down again),
# then the AFP decoder's fuzz target for a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest -L unit -j2 --output-on-failure --timeout 300
ctest -L integration --output-on-failure
cd ..
# The AFP reply decoder under libFuzzer + ASan/UBSan, for a bounded time.
bash scripts/fuzz-afp.sh 60
