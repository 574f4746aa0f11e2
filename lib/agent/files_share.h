// The client agent's files_share request: one small-file pass over a share
// (transfer/files_pass.h) with each phase's client CPU, as typed messages
// (core/messages.h, "small files over a share").
#pragma once

#include "core/clock.h"
#include "core/messages.h"
#include "transfer/files_pass.h"

namespace cp::agent {

// Checks the request (Error kPeer naming the field and its range) and runs
// the pass on `session`, with sessions from `more` for operations in flight.
msg::FilesShareResult run_files_share(const msg::FilesShareRequest& req, transfer::Session& session,
                                      const transfer::SessionSource& more,
                                      const CancelToken& cancel);

}  // namespace cp::agent
