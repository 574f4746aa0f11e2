// chokepoint-agent: the full agent (with the protocol clients), deployed on
// the client end (and on a server end with no static server agent for it); speaks the wire protocol
// on stdin/stdout (schemas/agent-protocol.md) until the channel closes.
#include "agent/driver_role.h"
#include "agent_server/agent.h"
#include "core/version.h"

int main(int argc, char** argv) {
  return cp::agent::agent_main("chokepoint-agent", "over SSH or as a subprocess", argc, argv,
                               {cp::kBuildId, cp::kVersion, cp::agent::make_client_role});
}
