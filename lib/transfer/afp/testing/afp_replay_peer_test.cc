#include "transfer/afp/testing/afp_replay_peer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/dsi.h"

namespace cp::transfer::testing {
namespace {

TEST(ReplayPeer, AnswersCapturedRequestsWithCapturedRepliesAndDropsOthers) {
  const auto captured = load_afp_capture("afp_guest_tmpvol.pcap");
  ReplayPeer peer(captured, {afp::kFPFlushFork});
  CancelToken cancel;
  {
    auto status = dsi::Connection::connect("127.0.0.1", peer.port(), &cancel);
    EXPECT_EQ(status->get_status(), captured[0].exchanges[0].reply->payload);
  }
  auto c = dsi::Connection::connect("127.0.0.1", peer.port(), &cancel);
  EXPECT_EQ(c->open_session(1024).server_quantum, 1048576u);
  // The captured FPLogin gets the captured (empty, successful) reply.
  const dsi::Message login = c->call(captured[1].exchanges[1].request.payload);
  EXPECT_EQ(login.header.error(), 0);
  // FPFlushFork is synthesized: an empty success.
  EXPECT_EQ(c->call(afp::encode_flush_fork(256)).header.error(), 0);
  // Anything else is not in the capture: the peer hangs up.
  const uint16_t id = c->send_command(afp::encode_get_srvr_msg(1, 0));
  EXPECT_THROW(c->wait(id), Error);
  const ReplayPeer::Report r = peer.report_after(2);
  EXPECT_EQ(r.matched, 3u);  // status, open session, login
  EXPECT_EQ(r.synthesized, std::vector<std::string>{"FPFlushFork"});
  ASSERT_EQ(r.unmatched.size(), 1u);
  EXPECT_EQ(r.unmatched[0].substr(32), "260000010000");  // after the 16-byte DSI header
}

}  // namespace
}  // namespace cp::transfer::testing
