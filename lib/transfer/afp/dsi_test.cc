#include "transfer/afp/dsi.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "transfer/afp/testing/afp_capture.h"
#include "transfer/testing/error_of.h"
#include "transfer/testing/loopback.h"

namespace cp::transfer::dsi {
namespace {

using testing::hex;

// The server end of a socketpair: blocking reads and writes of whole messages.
class FakeServer {
 public:
  explicit FakeServer(int fd) : fd_(fd), decoder_(64u << 20) {}
  ~FakeServer() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  Message read() {
    for (;;) {
      if (auto m = decoder_.next()) return *m;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) throw std::runtime_error("client closed");
      decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  // True when the client sent nothing more (now).
  bool quiet() {
    if (decoder_.buffered()) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }
  void send(uint8_t flags, uint8_t command, uint16_t id, int32_t code, std::string_view payload) {
    Header h;
    h.flags = flags;
    h.command = command;
    h.request_id = id;
    h.code = static_cast<uint32_t>(code);
    const std::string bytes = encode_message(h, payload);
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void reply(uint16_t id, std::string_view payload, int32_t code = 0) {
    send(kReply, kCommand, id, code, payload);
  }
  void send_raw(std::string_view bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

 private:
  int fd_;
  StreamDecoder decoder_;
};

struct Pair {
  std::unique_ptr<Connection> client;
  std::unique_ptr<FakeServer> server;
  // Sends `payload` as a command the server reads; its request id.
  uint16_t command_read(const std::string& payload) {
    const uint16_t id = client->send_command(payload);
    server->read();
    return id;
  }
};

Pair make_pair(ConnectionConfig config = {}) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  return {std::make_unique<Connection>(sv[0], "test:548", config),
          std::make_unique<FakeServer>(sv[1])};
}

using testing::error_of;

TEST(DsiFraming, HeaderRoundTripAndChecks) {
  Header h;
  h.flags = kReply;
  h.command = kWrite;
  h.request_id = 0xbeef;
  h.code = static_cast<uint32_t>(-5009);
  h.length = 8;
  const std::string b = encode_header(h);
  EXPECT_EQ(hex(b), "0106beefffffec6f0000000800000000");
  const Header d = decode_header(b, 100);
  EXPECT_EQ(d.request_id, 0xbeef);
  EXPECT_EQ(d.error(), -5009);
  EXPECT_TRUE(d.is_reply());
  std::string bad = b;
  bad[0] = 2;
  EXPECT_NE(error_of([&] { decode_header(bad, 100); }, ErrorKind::kPeer).find("flags"),
            std::string::npos);
  bad = b;
  bad[1] = 7;
  EXPECT_NE(error_of([&] { decode_header(bad, 100); }, ErrorKind::kPeer).find("unknown command"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_header(b, 7); }, ErrorKind::kPeer).find("byte limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_header(b.substr(0, 15), 100); }, ErrorKind::kPeer)
                .find("field 'reserved'"),
            std::string::npos);
  // A DSIWrite request whose data offset lies past its length.
  Header w;
  w.command = kWrite;
  w.code = 30;
  w.length = 20;
  EXPECT_THROW(decode_header(encode_header(w), 100), Error);
}

TEST(DsiFraming, OptionsRoundTripAndChecks) {
  SessionOptions o;
  o.server_quantum = 1048576;
  o.replay_cache = 128;
  EXPECT_EQ(hex(encode_options(o)), "000400100000020400000080");  // netatalk's reply bytes
  const SessionOptions d = decode_options(encode_options(o));
  EXPECT_EQ(d.server_quantum, 1048576u);
  EXPECT_FALSE(d.attention_quantum);
  EXPECT_EQ(d.replay_cache, 128u);
  // Unknown options are skipped; a known one must be 4 bytes.
  EXPECT_EQ(decode_options(std::string("\x09\x01x\x01\x04\x00\x00\x04\x00", 9)).attention_quantum,
            1024u);
  EXPECT_THROW(decode_options(std::string("\x00\x02\x00\x01", 4)), Error);
  EXPECT_THROW(decode_options(std::string("\x00\x04\x00", 3)), Error);
  EXPECT_THROW(decode_options(std::string("\x00", 1)), Error);
}

TEST(DsiFraming, StreamDecoderSplitsACapturedStreamFedByteByByte) {
  const auto conns = testing::load_afp_capture("afp_guest_tmpvol.pcap");
  const auto& session = conns.at(1);
  std::string bytes;
  for (const auto& m : session.from_server) bytes += encode_message(m.header, m.payload);
  StreamDecoder d(1u << 20);
  size_t n = 0;
  for (char c : bytes) {
    d.feed(std::string_view(&c, 1));
    while (auto m = d.next()) {
      ASSERT_LT(n, session.from_server.size());
      EXPECT_EQ(m->payload, session.from_server[n].payload);
      EXPECT_EQ(m->header.request_id, session.from_server[n].header.request_id);
      ++n;
    }
  }
  EXPECT_EQ(n, session.from_server.size());
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(DsiConnection, StatusAndOpenSession) {
  Pair p = make_pair();
  std::thread server([&] {
    const Message s = p.server->read();
    EXPECT_EQ(s.header.command, kGetStatus);
    p.server->send(kReply, kGetStatus, s.header.request_id, 0, "status block");
    const Message o = p.server->read();
    EXPECT_EQ(o.header.command, kOpenSession);
    EXPECT_EQ(hex(o.payload), "010400000400");  // attention quantum 1024, as afpcmd
    SessionOptions mine;
    mine.server_quantum = 300000;
    p.server->send(kReply, kOpenSession, o.header.request_id, 0, encode_options(mine));
  });
  EXPECT_EQ(p.client->get_status(), "status block");
  EXPECT_EQ(p.client->open_session(1024).server_quantum, 300000u);
  server.join();
}

TEST(DsiConnection, PipelinedRequestsMatchRepliesOutOfOrder) {
  Pair p = make_pair();
  const uint16_t a = p.client->send_command("a");
  const uint16_t b = p.client->send_command("b");
  const uint16_t c = p.client->send_command("c");
  EXPECT_EQ(p.client->pending(), 3u);
  std::vector<Message> got;
  for (int i = 0; i < 3; ++i) got.push_back(p.server->read());
  EXPECT_EQ(got[0].header.request_id, a);
  EXPECT_EQ(got[2].payload, "c");
  p.server->reply(c, "C");
  p.server->reply(a, "A", -5009);
  p.server->reply(b, "B");
  EXPECT_EQ(p.client->wait(a).header.error(), -5009);
  EXPECT_EQ(p.client->wait(b).payload, "B");
  EXPECT_EQ(p.client->wait(c).payload, "C");
  EXPECT_EQ(p.client->pending(), 0u);
}

TEST(DsiConnection, DiscardedRepliesAreDropped) {
  Pair p = make_pair();
  const uint16_t a = p.client->send_command("a");
  const uint16_t b = p.client->send_command("b");
  p.client->discard(a);
  p.server->reply(a, "late");
  p.server->reply(b, "B");
  EXPECT_EQ(p.client->wait(b).payload, "B");
  EXPECT_EQ(p.client->pending(), 0u);
}

TEST(DsiConnection, AnswersServerTicklesAndTicklesWhenIdle) {
  Pair p = make_pair();
  const uint16_t a = p.command_read("a");
  p.server->send(kRequest, kTickle, 7, 0, "");
  p.server->reply(a, "A");
  EXPECT_EQ(p.client->wait(a).payload, "A");
  const Message t = p.server->read();
  EXPECT_EQ(t.header.command, kTickle);
  EXPECT_FALSE(t.header.is_reply());
  EXPECT_EQ(p.client->stats().tickles_received, 1u);
  // Not idle long enough: nothing; idle (threshold 0): one tickle.
  p.client->keepalive(1e9);
  EXPECT_TRUE(p.server->quiet());
  p.client->keepalive(0);
  EXPECT_EQ(p.server->read().header.command, kTickle);
  EXPECT_EQ(p.client->stats().tickles_sent, 2u);
}

TEST(DsiConnection, AttentionIsAcknowledgedAndAShutdownFailsTheNextCall) {
  Pair p = make_pair();
  const uint16_t a = p.command_read("a");
  p.server->send(kRequest, kAttention, 3, 0, std::string("\x80\x05", 2));
  const std::string msg = error_of([&] { p.client->wait(a); }, ErrorKind::kRemote);
  EXPECT_NE(msg.find("test:548 announced that it shuts down in 5 min"), std::string::npos);
  const Message ack = p.server->read();
  EXPECT_TRUE(ack.header.is_reply());
  EXPECT_EQ(ack.header.command, kAttention);
  EXPECT_EQ(ack.header.request_id, 3);
  EXPECT_THROW(p.client->send_command("b"), Error);
}

TEST(DsiConnection, AnAttentionWithoutShutdownIsOnlyAcknowledged) {
  Pair p = make_pair();
  const uint16_t a = p.command_read("a");
  p.server->send(kRequest, kAttention, 9, 0, std::string("\x20\x00", 2));  // a message waits
  p.server->reply(a, "A");
  EXPECT_EQ(p.client->wait(a).payload, "A");
  EXPECT_EQ(p.server->read().header.command, kAttention);
  EXPECT_EQ(p.client->stats().attentions, 1u);
}

TEST(DsiConnection, ServerClosingFailsCleanlyAndStaysFailed) {
  Pair p = make_pair();
  const uint16_t a = p.client->send_command("a");
  p.server->close();
  const std::string msg = error_of([&] { p.client->wait(a); }, ErrorKind::kRemote);
  EXPECT_NE(msg.find("AFP server test:548 closed the connection"), std::string::npos);
  EXPECT_TRUE(p.client->broken());
  EXPECT_EQ(error_of([&] { p.client->send_command("b"); }, ErrorKind::kRemote), msg);
}

TEST(DsiConnection, ServerCloseSessionFails) {
  Pair p = make_pair();
  const uint16_t a = p.client->send_command("a");
  p.server->send(kRequest, kCloseSession, 1, 0, "");
  EXPECT_NE(error_of([&] { p.client->wait(a); }, ErrorKind::kRemote).find("closed the session"),
            std::string::npos);
}

// netatalk refusing a login: the reply (kFPUserNotAuth), an attention and
// DSICloseSession arrive together; the reply is still the answer.
TEST(DsiConnection, AReplyThatCameBeforeCloseSessionIsReturned) {
  for (bool into : {false, true}) {
    SCOPED_TRACE(into ? "wait_into" : "wait");
    Pair p = make_pair();
    const uint16_t a = p.client->send_command("login");
    Header reply, attention, close;
    reply.flags = kReply;
    reply.command = kCommand;
    reply.request_id = a;
    reply.code = static_cast<uint32_t>(-5023);  // kFPUserNotAuth
    attention.flags = kRequest;
    attention.command = kAttention;
    attention.request_id = 1;
    close.flags = kRequest;
    close.command = kCloseSession;
    close.request_id = 2;
    p.server->send_raw(encode_message(reply, "") +
                       encode_message(attention, std::string("\x80\x00", 2)) +
                       encode_message(close, ""));
    if (into) {
      char buf[16];
      EXPECT_EQ(p.client->wait_into(a, buf, sizeof buf).error(), -5023);
    } else {
      EXPECT_EQ(p.client->wait(a).header.error(), -5023);
    }
    // The session is over for whatever comes next.
    EXPECT_THROW(p.client->wait(p.client->send_command("next")), Error);
  }
}

TEST(DsiConnection, ProtocolViolationsArePeerErrors) {
  {
    Pair p = make_pair();
    const uint16_t a = p.client->send_command("a");
    p.server->reply(static_cast<uint16_t>(a + 5), "stray");
    EXPECT_NE(error_of([&] { p.client->wait(a); }, ErrorKind::kPeer).find("awaits no reply"),
              std::string::npos);
  }
  {
    Pair p = make_pair();
    const uint16_t a = p.client->send_command("a");
    p.server->send(kReply, kWrite, a, 0, "");  // wrong reply command
    EXPECT_NE(error_of([&] { p.client->wait(a); }, ErrorKind::kPeer).find("DSIWrite reply"),
              std::string::npos);
  }
  {
    Pair p = make_pair();
    p.client->set_max_reply(100);
    const uint16_t a = p.client->send_command("a");
    p.server->reply(a, std::string(101, 'x'));
    EXPECT_NE(error_of([&] { p.client->wait(a); }, ErrorKind::kPeer).find("100 byte limit"),
              std::string::npos);
  }
}

TEST(DsiConnection, LargeWriteWhileTheServerTalks) {
  // The client keeps reading while its send blocks, so a server that
  // tickles before it reads cannot deadlock the connection.
  Pair p = make_pair();
  std::string data(4u << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  Message got;
  std::thread server([&] {
    for (int i = 0; i < 3000; ++i) p.server->send(kRequest, kTickle, uint16_t(i), 0, "");
    got = p.server->read();
    p.server->send(kReply, kWrite, got.header.request_id, 0, "ok");
  });
  const uint16_t id = p.client->send_write("HDR", data);
  EXPECT_EQ(p.client->wait(id).payload, "ok");
  server.join();
  EXPECT_EQ(got.header.command, kWrite);
  EXPECT_EQ(got.header.code, 3u);
  EXPECT_EQ(got.payload.substr(0, 3), "HDR");
  EXPECT_TRUE(got.payload.substr(3) == data);
  EXPECT_EQ(p.client->stats().tickles_received, 3000u);
}

TEST(DsiConnection, CancelAndSilenceEndAWait) {
  {
    Pair p = make_pair();
    CancelToken cancel;
    cancel.cancel();
    p.client->set_cancel(&cancel);
    const uint16_t a = p.client->send_command("a");
    error_of([&] { p.client->wait(a); }, ErrorKind::kCancelled);
  }
  {
    ConnectionConfig cfg;
    cfg.reply_timeout_s = 0.2;
    Pair p = make_pair(cfg);
    const uint16_t a = p.client->send_command("a");
    EXPECT_NE(error_of([&] { p.client->wait(a); }, ErrorKind::kRemote).find("sent nothing"),
              std::string::npos);
  }
}

std::string bytes_of(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + seed);
  return s;
}

TEST(DsiConnection, WaitIntoLandsRepliesInTheCallersBuffer) {
  Pair p = make_pair();
  const uint16_t a = p.client->send_command("a");
  const uint16_t b = p.client->send_command("b");
  const uint16_t c = p.client->send_command("c");
  for (int i = 0; i < 3; ++i) p.server->read();
  const std::string big = bytes_of(3u << 20, 1), small = bytes_of(1000, 2);
  // c comes first (kept until asked for), then a large a while it is awaited, then b.
  p.server->reply(c, small);
  std::thread server([&] {
    p.server->reply(a, big, -5009);
    p.server->reply(b, "B");
  });
  std::vector<char> buf(4u << 20);
  const Header ha = p.client->wait_into(a, buf.data(), buf.size());
  EXPECT_EQ(ha.error(), -5009);
  ASSERT_EQ(ha.length, big.size());
  EXPECT_TRUE(std::string(buf.data(), ha.length) == big);
  server.join();
  EXPECT_EQ(p.client->wait_into(c, buf.data(), 1000).length, 1000u);
  EXPECT_TRUE(std::string(buf.data(), 1000) == small);
  EXPECT_EQ(p.client->wait(b).payload, "B");
  EXPECT_EQ(p.client->pending(), 0u);
}

TEST(DsiConnection, WaitIntoRefusesMoreThanAskedFor) {
  Pair p = make_pair();
  const uint16_t a = p.command_read("a");
  p.server->reply(a, bytes_of(5000, 3));
  std::vector<char> buf(4096);
  error_of([&] { p.client->wait_into(a, buf.data(), buf.size()); }, ErrorKind::kPeer);
  EXPECT_EQ(p.client->pending(), 0u);
}

TEST(DsiConnection, AWaitIntoLeftHalfwayKeepsTheReplyWhole) {
  // The reply is half there when the wait is cancelled: its bytes move out
  // of the caller's buffer (which may be gone), and a later wait gets all.
  Pair p = make_pair();
  CancelToken cancel;
  p.client->set_cancel(&cancel);
  const uint16_t a = p.command_read("a");
  const std::string big = bytes_of(2u << 20, 4);
  Header h;
  h.flags = kReply;
  h.command = kCommand;
  h.request_id = a;
  const std::string frame = encode_message(h, big);
  std::atomic<bool> trashed{false};
  std::thread server([&] {  // a socketpair holds less than half: send while the client reads
    p.server->send_raw(std::string_view(frame).substr(0, frame.size() / 2));
    while (!trashed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    p.server->send_raw(std::string_view(frame).substr(frame.size() / 2));
  });
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.cancel();
  });
  {
    std::vector<char> buf(big.size());
    error_of([&] { p.client->wait_into(a, buf.data(), buf.size()); }, ErrorKind::kCancelled);
    std::fill(buf.begin(), buf.end(), 'x');
  }
  canceller.join();
  p.client->set_cancel(nullptr);
  trashed = true;
  EXPECT_TRUE(p.client->wait(a).payload == big);
  server.join();
}

TEST(DsiConnection, RefusedPortNamesHostAndPort) {
  const uint16_t port = testing::closed_loopback_port();
  CancelToken cancel;
  const std::string msg =
      error_of([&] { Connection::connect("127.0.0.1", port, &cancel); }, ErrorKind::kRemote);
  EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port) + " refused the connection"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace cp::transfer::dsi
