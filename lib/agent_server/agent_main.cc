#include <cstdio>
#include <cstring>

#include "agent_server/agent.h"
#include "core/sha256.h"

namespace cp::agent {

int agent_main(const char* program, const char* started, int argc, char** argv,
               const AgentOptions& options) {
  if (argc == 2 && (std::strcmp(argv[1], "--version") == 0)) {
    std::printf("%s %s (build %s)\n", program, options.version.c_str(), options.build_id.c_str());
    return 0;
  }
  // --self-check HEX --serve: refuse to serve unless this image hashes to
  // HEX (the orchestrator's check where the host has no sha256sum).
  if (auto rc = self_check_main(program, argc, argv)) {
    if (*rc != 0) return *rc < 0 ? 0 : *rc;
  } else if (argc != 2 || std::strcmp(argv[1], "--serve") != 0) {
    std::fprintf(stderr,
                 "usage: %s --serve | --version | --self-check SHA256-HEX [--serve]\n"
                 "  The chokepoint orchestrator starts this %s; it is not meant to be run by "
                 "hand.\n",
                 program, started);
    return 2;
  }
  return serve(0, 1, options);
}

}  // namespace cp::agent
