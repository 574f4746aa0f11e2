// The agent: the program deployed on each endpoint. It speaks the wire
// protocol (core/wire.h, schemas/agent-protocol.md) on in_fd/out_fd, runs
// one request at a time on a worker thread, and cleans up everything it
// made when its channel closes, on `bye`, or on SIGINT/SIGTERM.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/messages.h"

namespace cp::agent {

class ClientRole;  // agent_server/client_role.h

struct AgentOptions {
  std::string build_id;  // printed in the sentinel; the orchestrator compares it
  std::string version;   // chokepoint version
  // Makes the protocol clients (transfer, size scan): make_client_role() in the
  // full agent; empty in the static server agent, which refuses them.
  std::function<std::unique_ptr<ClientRole>()> client_role;
};

// Run directories and their orphan cleanup: agent_server/run_dir.h.

// Serves until the peer closes in_fd, says bye, or a signal arrives.
// Returns the process exit code (0 on a clean end).
int serve(int in_fd, int out_fd, const AgentOptions& options);

// The agents' main (chokepoint-agent, chokepoint-agent-server, agent_main.cc):
// --version; --self-check SHA256-HEX [--serve] (core/sha256.h); --serve on
// stdin/stdout. Anything else prints the usage, which says the orchestrator
// starts `program` `started` ("over SSH on the server end"), and returns 2.
int agent_main(const char* program, const char* started, int argc, char** argv,
               const AgentOptions& options);

}  // namespace cp::agent
