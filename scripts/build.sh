#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root) and builds into build/,
# then the static server agents (build/bin/chokepoint-agent-server-ARCH).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2
bash scripts/build-agents.sh
