// chokepoint-agent-server: the agent for the server end of a diagnosis. It
// serves every server-side request (disk, TCP, CPU, facts, share files,
// smb_status) and has no protocol client, so it links statically and runs
// on a NAS without Debian's libraries (scripts/build-agents.sh builds it for
// x86_64 and aarch64). The orchestrator uploads it and starts it over SSH.
#include "agent_server/agent.h"
#include "core/version.h"

int main(int argc, char** argv) {
  // No client role: transfer and the size scan are refused (the client end's full
  // chokepoint-agent serves them).
  return cp::agent::agent_main("chokepoint-agent-server", "over SSH on the server end", argc, argv,
                               {cp::kBuildId, cp::kVersion, {}});
}
