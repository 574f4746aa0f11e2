// The protocol-client requests (transfer, the size scan's "sweep", files_share, close_shares). The
// full agent (chokepoint-agent, the client end) serves them through the transfer drivers (libcurl,
// libsmbclient, ...); the static server agent (chokepoint-agent-server) is built without a
// ClientRole and refuses them, so it links no protocol client. Requests and results are the typed
// messages of core/messages.h; the agent decodes and encodes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent_server/file_ops.h"
#include "core/clock.h"
#include "core/messages.h"

namespace cp::agent {

// What the agent hands a client request besides its message.
struct ClientCall {
  const CancelToken& cancel;
  ProgressFn progress;  // sends progress frames (at most every 0.5 s)
  RunFile local;        // transfer: the request's local file in its run dir
};

class ClientRole {
 public:
  virtual ~ClientRole() = default;
  // The transfer drivers this role has (hello's "drivers").
  virtual std::vector<std::string> drivers() const = 0;
  virtual msg::TransferResult transfer(const msg::TransferRequest& req, const ClientCall& call) = 0;
  virtual msg::SizeScanResult size_scan(const msg::SizeScanRequest& req,
                                        const ClientCall& call) = 0;
  // One small-file pass over a share (docs/small-files.md).
  virtual msg::FilesShareResult files_share(const msg::FilesShareRequest& req,
                                            const ClientCall& call) = 0;
  // Logs out of every share (close_shares, cleanup).
  virtual void close_shares() = 0;
  // From the agent's reader thread at shutdown: cancels open sessions.
  virtual void cancel_sessions() = 0;
};

}  // namespace cp::agent
