#include "agent_server/tcp_ops.h"

#include <gtest/gtest.h>

#include <future>

namespace cp::agent {
namespace {

// The listening side's CPU window covers the whole wait for its stream, so
// the server's CPU over a TCP sample is its CPU during the transfer (a window
// closed before the wait left the sender's threads unseen on one stream,
// while several streams were measured).
TEST(TcpResultOp, TheCpuWindowCoversTheTransferOnOneStreamAndOnSeveral) {
  for (const std::vector<std::string>& tokens :
       {std::vector<std::string>{}, std::vector<std::string>{"s1", "s2"}}) {
    const std::string token = tokens.empty() ? "one" : tokens.front();
    probe::TcpServer server("127.0.0.1", 0, tokens.empty() ? std::vector{token} : tokens);
    CancelToken cancel;
    // The listener's side is asked first, as the TCP stage asks it; the
    // client sends for 1 s.
    auto listening = std::async(std::launch::async, [&] {
      return tcp_result_op(server, msg::TcpResultRequest{token, 30, tokens}, cancel);
    });
    const msg::TcpResult sent = tcp_run_op(
        msg::TcpRunRequest{"127.0.0.1", server.port(), token, "send", 1.0, 128u << 10, tokens},
        cancel, {});
    const msg::TcpResult got = listening.get();
    ASSERT_GT(got.bytes, 0u);
    EXPECT_GE(got.cpu.seconds, 0.9 * got.seconds) << tokens.size() << " tokens";
    EXPECT_GE(sent.cpu.seconds, 0.9 * sent.seconds) << tokens.size() << " tokens";
  }
}

}  // namespace
}  // namespace cp::agent
