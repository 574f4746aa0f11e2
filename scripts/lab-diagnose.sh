#!/usr/bin/env bash
# The main job on the built-in lab: install, build what it runs (the
# orchestrator, the full agent and this machine's static server agent; no
# test, no cross agent: scripts/test.sh builds those), bring up the two-host
# lab (network namespaces with sshd, tmpfs and loop-device disks; root), and
# diagnose it. Extra arguments go to `lab up` (e.g. --rate 1gbit --mtu 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target chokepoint chokepoint-agent
bash scripts/build-agents.sh --agent-only "$(uname -m)"
./build/bin/chokepoint lab up "$@"
./build/bin/chokepoint diagnose --lab --label "lab${*:+ $*}"
