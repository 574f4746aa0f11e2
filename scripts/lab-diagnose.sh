#!/usr/bin/env bash
# The main job on the built-in lab: install, build, bring up the two-host lab
# (network namespaces with sshd, tmpfs and loop-device disks; root), and
# diagnose it. Extra arguments go to `lab up` (e.g. --rate 1gbit --mtu 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/bin/chokepoint lab up "$@"
./build/bin/chokepoint diagnose --lab --label "lab${*:+ $*}"
