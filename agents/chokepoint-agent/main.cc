// chokepoint-agent: the full agent (with the protocol clients), deployed on
// the client end (and on a server end with no static server agent for it); speaks the wire protocol
// on stdin/stdout (schemas/agent-protocol.md) until the channel closes.
#include <cstdio>
#include <cstring>

#include "agent/driver_role.h"
#include "agent_server/agent.h"
#include "core/sha256.h"
#include "core/version.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--version") == 0)) {
    std::printf("chokepoint-agent %s (build %s)\n", cp::kVersion, cp::kBuildId);
    return 0;
  }
  // --self-check HEX --serve: refuse to serve unless this image hashes to
  // HEX (the orchestrator's check where the host has no sha256sum).
  if (auto rc = cp::self_check_main("chokepoint-agent", argc, argv)) {
    if (*rc != 0) return *rc < 0 ? 0 : *rc;
  } else if (argc != 2 || std::strcmp(argv[1], "--serve") != 0) {
    std::fprintf(stderr,
                 "usage: chokepoint-agent --serve | --version | --self-check SHA256-HEX [--serve]\n"
                 "  The chokepoint orchestrator starts this over SSH or as a subprocess; it is "
                 "not meant to be run by hand.\n");
    return 2;
  }
  return cp::agent::serve(0, 1, {cp::kBuildId, cp::kVersion, cp::agent::make_client_role});
}
