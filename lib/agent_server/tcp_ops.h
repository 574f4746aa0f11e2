// The TCP stage's requests as the agent answers them (agent.cc's table):
// tcp_run (the connecting side: one stream, or several each on its own
// thread) and tcp_result (the listening side's figures of the same streams),
// each with this host's CPU over the sample.
#pragma once

#include "agent_server/file_ops.h"
#include "core/clock.h"
#include "core/messages.h"
#include "probe/tcp.h"

namespace cp::agent {

// Throws Error(kPeer) for a request no agent should get (bad mode or port).
msg::TcpResult tcp_run_op(const msg::TcpRunRequest& q, const CancelToken& cancel,
                          const ProgressFn& progress);
msg::TcpResult tcp_result_op(probe::TcpServer& server, const msg::TcpResultRequest& q,
                             const CancelToken& cancel);

// Several streams' results as one: bytes summed, the longest time, the
// counters of their sockets summed and the first one's RTT and path; each
// stream's own in `streams`.
msg::TcpResult combine_streams(const std::vector<probe::TcpResult>& streams, msg::CpuSummary cpu);

}  // namespace cp::agent
