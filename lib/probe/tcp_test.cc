#include "probe/tcp.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <atomic>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace cp::probe {
namespace {

constexpr double kWait = 30;  // s: generous bound for a result; never a timing assertion

// A plain loopback client for feeding the server bad headers.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  // True when the server closes (or resets) the connection.
  bool closed_by_peer() {
    char buf[64];
    timeval tv{static_cast<time_t>(kWait), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return ::recv(fd_, buf, sizeof buf, 0) <= 0 && errno != EAGAIN;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string header(const std::string& magic, uint8_t mode, const std::string& token,
                   uint32_t duration_ms, uint32_t buffer) {
  std::string h(kTcpHeaderSize, '\0');
  std::memcpy(h.data(), magic.data(), std::min<size_t>(magic.size(), 6));
  h[6] = static_cast<char>(mode);
  h[7] = static_cast<char>(token.size());
  std::memcpy(h.data() + 8, token.data(), std::min(token.size(), kMaxTcpToken));
  for (int i = 0; i < 4; ++i) {
    h[72 + i] = static_cast<char>(duration_ms >> (24 - 8 * i));
    h[76 + i] = static_cast<char>(buffer >> (24 - 8 * i));
  }
  return h;
}

// Waits until the server has kept `n` rejections; returns them.
std::vector<std::string> wait_rejections(const TcpServer& server, size_t n) {
  for (int i = 0; i < 3000 && server.rejections().size() < n; ++i) usleep(10000);
  return server.rejections();
}

TEST(Tcp, ConnectorSendsServerReceives) {
  TcpServer server("127.0.0.1");
  ASSERT_NE(server.port(), 0);
  CancelToken cancel;
  int reports = 0;
  TcpResult c = tcp_run("127.0.0.1", server.port(), "s1", TcpMode::kSend, 0.6, kDefaultTcpBuffer,
                        cancel, [&](uint64_t bytes, double seconds) { ++reports; });
  TcpResult s = server.wait_result("s1", kWait, cancel);
  EXPECT_TRUE(c.sender);
  EXPECT_FALSE(s.sender);
  EXPECT_GT(c.bytes, 0u);
  EXPECT_EQ(c.bytes, s.bytes);
  EXPECT_GT(c.seconds, 0);
  EXPECT_GT(s.seconds, 0);
  EXPECT_TRUE(c.info.available);
  EXPECT_GT(c.info.snd_mss, 0u);
  EXPECT_GT(reports, 0);
  // Collected results are forgotten.
  EXPECT_THROW(server.wait_result("s1", 0.1, cancel), Error);
}

TEST(Tcp, ConnectorReceivesServerSends) {
  TcpServer server("127.0.0.1");
  CancelToken cancel;
  TcpResult c =
      tcp_run("localhost", server.port(), "r1", TcpMode::kRecv, 0.3, 64 << 10, cancel, nullptr);
  TcpResult s = server.wait_result("r1", kWait, cancel);
  EXPECT_FALSE(c.sender);
  EXPECT_TRUE(s.sender);
  EXPECT_GT(s.bytes, 0u);
  EXPECT_EQ(c.bytes, s.bytes);
  EXPECT_TRUE(s.info.available);
  EXPECT_GT(s.info.snd_cwnd, 0u);
}

TEST(Tcp, SeveralSamplesInParallelKeepTheirTokens) {
  TcpServer server("127.0.0.1");
  CancelToken cancel;
  auto a = std::async(std::launch::async, [&] {
    return tcp_run("127.0.0.1", server.port(), "a", TcpMode::kSend, 0.3, kDefaultTcpBuffer, cancel,
                   nullptr);
  });
  auto b = std::async(std::launch::async, [&] {
    return tcp_run("127.0.0.1", server.port(), "b", TcpMode::kRecv, 0.3, kDefaultTcpBuffer, cancel,
                   nullptr);
  });
  TcpResult ca = a.get(), cb = b.get();
  EXPECT_EQ(server.wait_result("b", kWait, cancel).bytes, cb.bytes);
  EXPECT_EQ(server.wait_result("a", kWait, cancel).bytes, ca.bytes);
}

TEST(Tcp, SeveralStreamsRunAtOnceEachWithItsOwnFigure) {
  const std::vector<std::string> tokens{"m1", "m2", "m3"};
  TcpServer server("127.0.0.1", 0, tokens);
  CancelToken cancel;
  std::atomic<uint64_t> last{0};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TcpResult> c =
      tcp_run_streams("127.0.0.1", server.port(), tokens, TcpMode::kSend, 0.5, kDefaultTcpBuffer,
                      cancel, [&](uint64_t bytes, double) { last = bytes; });
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(c.size(), 3u);
  uint64_t sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const TcpResult s = server.wait_result(tokens[i], kWait, cancel);
    EXPECT_TRUE(c[i].sender);
    EXPECT_GT(c[i].bytes, 0u);
    EXPECT_EQ(c[i].bytes, s.bytes) << tokens[i];
    sum += c[i].bytes;
  }
  // At once, not one after another (3 x 0.5 s).
  EXPECT_LT(took, 1.4);
  EXPECT_LE(last.load(), sum);
  EXPECT_GT(last.load(), 0u);
}

TEST(Tcp, SeveralStreamsFailTogetherWhenOneIsRefused) {
  TcpServer server("127.0.0.1", 0, {"ok1", "ok2"});
  CancelToken cancel;
  EXPECT_THROW(tcp_run_streams("127.0.0.1", server.port(), {"ok1", "stranger"}, TcpMode::kSend, 0.5,
                               kDefaultTcpBuffer, cancel, nullptr),
               Error);
  EXPECT_THROW(tcp_run_streams("127.0.0.1", server.port(), {}, TcpMode::kSend, 0.5,
                               kDefaultTcpBuffer, cancel, nullptr),
               Error);
}

TEST(Tcp, BadHeadersAreRejectedAndTheServerKeepsServing) {
  TcpServer server("127.0.0.1");
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.connected());
    c.send(std::string(kTcpHeaderSize, 'x'));
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    RawClient c(server.port());
    c.send("CPTCP1");
    c.shutdown_write();
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    RawClient c(server.port());
    c.send(header("CPTCP1", 7, "t", 1000, 65536));
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    RawClient c(server.port());
    c.send(header("CPTCP1", 0, "", 1000, 65536));
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    RawClient c(server.port());
    c.send(header("CPTCP1", 1, "t", 1000, 1u << 30));
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    RawClient c(server.port());
    c.send(header("CPTCP1", 1, "t", 0, 65536));
    EXPECT_TRUE(c.closed_by_peer());
  }
  std::vector<std::string> r = wait_rejections(server, 6);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_NE(r[0].find("bad magic"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("127.0.0.1:"), std::string::npos) << r[0];
  EXPECT_NE(r[1].find("closed after 6 of 80"), std::string::npos) << r[1];
  EXPECT_NE(r[2].find("unknown mode 7"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("token length 0"), std::string::npos) << r[3];
  EXPECT_NE(r[4].find("buffer"), std::string::npos) << r[4];
  EXPECT_NE(r[5].find("duration"), std::string::npos) << r[5];

  CancelToken cancel;
  TcpResult c = tcp_run("127.0.0.1", server.port(), "after", TcpMode::kSend, 0.2, kDefaultTcpBuffer,
                        cancel, nullptr);
  EXPECT_EQ(server.wait_result("after", kWait, cancel).bytes, c.bytes);
}

TEST(Tcp, DuplicateTokenIsRejected) {
  TcpServer server("127.0.0.1");
  CancelToken cancel;
  tcp_run("127.0.0.1", server.port(), "dup", TcpMode::kRecv, 0.1, kDefaultTcpBuffer, cancel,
          nullptr);
  // The first result is not collected yet: a second sample under its name is refused.
  EXPECT_THROW(tcp_run("127.0.0.1", server.port(), "dup", TcpMode::kRecv, 0.1, kDefaultTcpBuffer,
                       cancel, nullptr),
               Error);
  std::vector<std::string> r = wait_rejections(server, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("duplicate token 'dup'"), std::string::npos) << r[0];
  EXPECT_GT(server.wait_result("dup", kWait, cancel).bytes, 0u);
}

TEST(Tcp, CancelStopsBothSides) {
  for (TcpMode mode : {TcpMode::kSend, TcpMode::kRecv}) {
    TcpServer server("127.0.0.1");
    CancelToken cancel;
    const std::string token = mode == TcpMode::kSend ? "cs" : "cr";
    // The first progress report cancels a sample meant to run for a minute.
    try {
      tcp_run("127.0.0.1", server.port(), token, mode, 60, kDefaultTcpBuffer, cancel,
              [&](uint64_t, double) { cancel.cancel(); });
      ADD_FAILURE() << "not cancelled";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
    }
    CancelToken other;
    try {
      server.wait_result(token, kWait, other);
      ADD_FAILURE() << "server side did not fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo);
      EXPECT_NE(std::string(e.what()).find("failed on this side"), std::string::npos) << e.what();
    }
  }
}

TEST(Tcp, WaitResultTimesOutOrIsCancelled) {
  TcpServer server("127.0.0.1");
  CancelToken cancel;
  try {
    server.wait_result("unknown", 0.2, cancel);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("unknown"), std::string::npos);
    EXPECT_NE(e.hint().find(std::to_string(server.port())), std::string::npos) << e.hint();
  }
  cancel.cancel();
  try {
    server.wait_result("unknown", kWait, cancel);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
}

TEST(Tcp, StoppingTheServerFailsTheRunningSample) {
  auto server = std::make_unique<TcpServer>("127.0.0.1");
  CancelToken cancel;
  std::promise<void> started;
  auto client = std::async(std::launch::async, [&] {
    bool first = true;
    return tcp_run("127.0.0.1", server->port(), "stop", TcpMode::kRecv, 60, kDefaultTcpBuffer,
                   cancel, [&](uint64_t, double) {
                     if (first) started.set_value();
                     first = false;
                   });
  });
  started.get_future().wait();
  server.reset();  // must not hang, and must not look like a finished sample
  try {
    client.get();
    ADD_FAILURE() << "a stopped server produced a clean sample";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
}

// A listener whose accept queue is full drops further SYNs, so a connect to
// it hangs in SYN retries: a cancel still ends it (kCancelled, not kIo).
TEST(Tcp, CancelEndsAConnectThatHangs) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  // Fill the accept queue (never accepted).
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(c);
  }
  ::usleep(200 * 1000);  // let the handshakes that can complete do so
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.cancel();
  });
  std::optional<ErrorKind> kind;
  try {
    tcp_run("127.0.0.1", ntohs(addr.sin_port), "x", TcpMode::kSend, 1, kDefaultTcpBuffer, cancel,
            nullptr);
  } catch (const Error& e) {
    kind = e.kind();
  }
  canceller.join();
  EXPECT_EQ(kind, ErrorKind::kCancelled);
  for (int c : fillers) ::close(c);
  ::close(listener);
}

TEST(Tcp, ConnectionErrorsAndBadArguments) {
  uint16_t port;
  {
    TcpServer gone("127.0.0.1");
    port = gone.port();
  }
  CancelToken cancel;
  try {
    tcp_run("127.0.0.1", port, "x", TcpMode::kSend, 1, kDefaultTcpBuffer, cancel, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos);
  }
  auto config_error = [&](const std::string& token, double seconds, uint32_t buffer) {
    try {
      tcp_run("127.0.0.1", port, token, TcpMode::kSend, seconds, buffer, cancel, nullptr);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kConfig;
    }
    return false;
  };
  EXPECT_TRUE(config_error("", 1, kDefaultTcpBuffer));
  EXPECT_TRUE(config_error(std::string(65, 't'), 1, kDefaultTcpBuffer));
  EXPECT_TRUE(config_error("t", 0, kDefaultTcpBuffer));
  EXPECT_TRUE(config_error("t", 1, 10));
  EXPECT_TRUE(config_error("t", 1, kMaxTcpBuffer + 1));

  try {
    TcpServer bad("not-an-address");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
  TcpServer first("127.0.0.1");
  try {
    TcpServer second("127.0.0.1", first.port());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.hint().find("another port"), std::string::npos) << e.hint();
  }
}

// A stranger on the listener's port with a header of its own: a token the
// listener does not serve is dropped at once (no payload, no result), and the
// real sample, with its random token, still measures.
TEST(SecurityTcpProbe, AStrangersTokenIsDroppedAndTheSampleStillMeasures) {
  const std::string token = random_hex(16);
  TcpServer server("127.0.0.1", 0, {token});
  for (const std::string& guess : {std::string("up-1-1234"), random_hex(16)}) {
    RawClient stranger(server.port());
    ASSERT_TRUE(stranger.connected());
    stranger.send(header("CPTCP1", 1, guess, 1000, kDefaultTcpBuffer));  // it wants data
    EXPECT_TRUE(stranger.closed_by_peer()) << guess;
  }
  EXPECT_EQ(wait_rejections(server, 2).size(), 2u);
  CancelToken cancel;
  const TcpResult c = tcp_run("127.0.0.1", server.port(), token, TcpMode::kSend, 0.3,
                              kDefaultTcpBuffer, cancel, {});
  const TcpResult s = server.wait_result(token, kWait, cancel);
  EXPECT_GT(c.bytes, 0u);
  EXPECT_EQ(s.bytes, c.bytes);
  EXPECT_THROW(server.wait_result("up-1-1234", 0.2, cancel), Error);  // nothing recorded
  // Each token serves once: a replay is dropped too.
  EXPECT_THROW(tcp_run("127.0.0.1", server.port(), token, TcpMode::kRecv, 0.3, kDefaultTcpBuffer,
                       cancel, {}),
               Error);
}

TEST(SecurityTcpProbe, ListensOnThePeersAddressWhereThisHostHasIt) {
  EXPECT_EQ(listen_address_for("127.0.0.1"), "127.0.0.1");
  // Not this host's (TEST-NET-1, RFC 5737), or a name: every address of the family.
  EXPECT_EQ(listen_address_for("192.0.2.1"), "0.0.0.0");
  EXPECT_EQ(listen_address_for("nas.example"), "0.0.0.0");
  EXPECT_EQ(listen_address_for("2001:db8::1"), "::");
  EXPECT_EQ(listen_address_for("0.0.0.0"), "0.0.0.0");
  TcpServer server(listen_address_for("127.0.0.1"));
  RawClient client(server.port());
  EXPECT_TRUE(client.connected());
}

}  // namespace
}  // namespace cp::probe
