// The full agent's client role (chokepoint-agent): the protocol-client
// requests served through every driver in lib/transfer.
#pragma once

#include <memory>

#include "agent_server/client_role.h"

namespace cp::agent {

std::unique_ptr<ClientRole> make_client_role();

}  // namespace cp::agent
