// chokepoint-agent-server: the agent for the server end of a diagnosis. It
// serves every server-side request (disk, TCP, CPU, facts, share files,
// smb_status) and has no protocol client, so it links statically and runs
// on a NAS without Debian's libraries (scripts/build-agents.sh builds it for
// x86_64 and aarch64). The orchestrator uploads it and starts it over SSH.
#include <cstdio>
#include <cstring>

#include "agent_server/agent.h"
#include "core/sha256.h"
#include "core/version.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--version") == 0)) {
    std::printf("chokepoint-agent-server %s (build %s)\n", cp::kVersion, cp::kBuildId);
    return 0;
  }
  // --self-check HEX --serve: refuse to serve unless this image hashes to
  // HEX (the orchestrator's check where the host has no sha256sum).
  if (auto rc = cp::self_check_main("chokepoint-agent-server", argc, argv)) {
    if (*rc != 0) return *rc < 0 ? 0 : *rc;
  } else if (argc != 2 || std::strcmp(argv[1], "--serve") != 0) {
    std::fprintf(
        stderr,
        "usage: chokepoint-agent-server --serve | --version | --self-check SHA256-HEX [--serve]\n"
        "  The chokepoint orchestrator starts this over SSH on the server end; it is "
        "not meant to be run by hand.\n");
    return 2;
  }
  // No client role: transfer and the size scan are refused (the client end's full
  // chokepoint-agent serves them).
  return cp::agent::serve(0, 1, {cp::kBuildId, cp::kVersion, {}});
}
