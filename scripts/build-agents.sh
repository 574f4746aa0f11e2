#!/usr/bin/env bash
# Builds the static server agent (chokepoint-agent-server: no protocol
# client, no shared library) for x86_64 and aarch64, each in its own tree
# (build/agents/ARCH, CHOKEPOINT_STATIC_AGENT=ON; aarch64 with Debian's cross
# toolchain and the arm64 -dev packages), and puts them beside the
# orchestrator as build/bin/chokepoint-agent-server-ARCH, where it looks for
# them by the server's `uname -m`.
# Usage: scripts/build-agents.sh [--agent-only] [ARCH...]   (default: x86_64 aarch64)
#   --agent-only: only the agent, not its tree's unit tests (scripts/lab-diagnose.sh)
# scripts/install-deps.sh installs the toolchain and qemu-user-static.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
if [ "${1:-}" = --agent-only ]; then
  targets=(--target chokepoint-agent-server)
  shift
fi
archs=("$@")
((${#archs[@]})) || archs=(x86_64 aarch64)
host=$(uname -m)
mkdir -p build/bin
for arch in "${archs[@]}"; do
  tree=build/agents/$arch
  args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHOKEPOINT_STATIC_AGENT=ON)
  if [ "$arch" != "$host" ]; then
    tc=cmake/$arch-linux-gnu.cmake
    if [ ! -f "$tc" ]; then
      echo "build-agents: no toolchain file $tc for $arch (this project builds x86_64 and aarch64)" >&2
      exit 2
    fi
    args+=(-DCMAKE_TOOLCHAIN_FILE="$PWD/$tc")
  fi
  cmake -S . -B "$tree" "${args[@]}" >/dev/null
  cmake --build "$tree" -j2 "${targets[@]}"
  # Refuse a binary that would need a shared library on the server.
  if ! file -b "$tree/bin/chokepoint-agent-server" | grep -q 'statically linked'; then
    echo "build-agents: $tree/bin/chokepoint-agent-server is not statically linked:" >&2
    file -b "$tree/bin/chokepoint-agent-server" >&2
    exit 1
  fi
  # Stripped: it is uploaded over SSH (~2 MB instead of ~20 MB with debug info).
  strip=strip
  [ "$arch" = "$host" ] || strip=$arch-linux-gnu-strip
  "$strip" -o "build/bin/chokepoint-agent-server-$arch" "$tree/bin/chokepoint-agent-server"
  chmod 755 "build/bin/chokepoint-agent-server-$arch"
  echo "build-agents: build/bin/chokepoint-agent-server-$arch"
done
