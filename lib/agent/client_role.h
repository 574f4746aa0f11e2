// The protocol-client requests (transfer, sweep, close_shares). The full
// agent (chokepoint-agent, the client end) serves them through the transfer
// drivers (libcurl, libsmbclient, ...); the static server agent
// (chokepoint-agent-server) is built without a ClientRole and refuses them,
// so it links no protocol client. Only .cc files include this (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/file_ops.h"
#include "core/clock.h"

namespace cp::agent {

struct ClientCall {
  const boost::json::object& req;
  const CancelToken& cancel;
  ProgressFn progress;  // sends progress frames (at most every 0.5 s)
  // The request's local file: its prepared run dir + its checked "name".
  std::function<std::string(const boost::json::object&)> local_path;
};

class ClientRole {
 public:
  virtual ~ClientRole() = default;
  // The transfer drivers this role has (hello's "drivers").
  virtual std::vector<std::string> drivers() const = 0;
  // "transfer" or "sweep".
  virtual boost::json::object handle(const std::string& type, const ClientCall& call) = 0;
  // Logs out of every share (close_shares, cleanup).
  virtual void close_shares() = 0;
  // From the agent's reader thread at shutdown: cancels open sessions.
  virtual void cancel_sessions() = 0;
};

// The full agent's client role: every driver in lib/transfer.
std::unique_ptr<ClientRole> make_client_role();

}  // namespace cp::agent
