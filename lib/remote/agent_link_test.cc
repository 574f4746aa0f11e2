// The link's handshake against scripted streams, and a local Endpoint (the
// agent binary as a subprocess).
#include "remote/agent_link.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/wire.h"
#include "remote/endpoint.h"
#include "remote/ssh.h"

namespace cp::remote {
namespace {

namespace fs = std::filesystem;

// A stream that replays fixed bytes and answers every request with `reply`.
// A hello answer as an agent sends it (msg::Hello's codec).
json::object hello_data() {
  msg::Hello h;
  h.version = "test";
  h.build = "b1";
  h.proto = wire::kProtocolVersion;
  h.pid = 1;
  h.role = "server";
  return msg::to_json(h);
}

class ScriptedStream : public ByteStream {
 public:
  explicit ScriptedStream(std::string bytes) : in_(std::move(bytes)) {}
  ReadResult read(char* buf, size_t size, double) override {
    if (pos_ == in_.size()) return {0, eof_when_done_};
    size_t n = std::min(size, in_.size() - pos_);
    std::copy(in_.data() + pos_, in_.data() + pos_ + n, buf);
    pos_ += n;
    return {n, false};
  }
  void write(std::string_view data) override {
    written_ += data;
    wire::Decoder d;
    d.feed(data);
    while (auto m = d.next()) {
      in_ += wire::encode({{"type", "result"}, {"id", wire::get_u64(*m, "id")}, {"data", answer_}});
    }
  }
  std::string stderr_text() override { return "bash: chokepoint-agent: not found"; }
  bool eof_when_done_ = true;
  std::string written_;
  json::object answer_ = hello_data();  // what every request is answered with

 private:
  std::string in_;
  size_t pos_ = 0;
};

TEST(AgentLink, SkipsLoginNoiseBeforeTheSentinel) {
  std::string bytes = "Welcome to host\nLast login: yesterday\n" + wire::sentinel_line("b1");
  auto s = std::make_unique<ScriptedStream>(bytes);
  s->eof_when_done_ = false;
  AgentLink link(std::move(s), "srv");
  const msg::Hello& hello = link.handshake(5);
  EXPECT_EQ(hello.proto, wire::kProtocolVersion);
  EXPECT_EQ(hello.build, "b1");
}

// The hello is read through its codec: one without the agent's role (not a
// chokepoint agent of this build) is the peer's error at the handshake.
TEST(AgentLink, AHelloMissingItsRoleIsAPeerError) {
  auto s = std::make_unique<ScriptedStream>(wire::sentinel_line("b1"));
  s->eof_when_done_ = false;
  s->answer_.erase("role");
  AgentLink link(std::move(s), "srv");
  try {
    link.handshake(5);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
  }
}

TEST(AgentLink, RefusesAnotherProtocolVersion) {
  AgentLink link(std::make_unique<ScriptedStream>("CHOKEPOINT-AGENT READY proto=99 build=x\n"),
                 "srv");
  try {
    link.handshake(5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("speaks protocol 99"), std::string::npos);
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(AgentLink, ClosedBeforeStartQuotesRemoteStderr) {
  AgentLink link(std::make_unique<ScriptedStream>("oops\n"), "srv");
  try {
    link.handshake(5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chokepoint-agent: not found"), std::string::npos)
        << e.what();
  }
}

// A peer that completes the handshake, then never answers again (a stopped agent).
class SilentAfterHello : public ByteStream {
 public:
  ReadResult read(char* buf, size_t size, double timeout_s) override {
    if (pos_ == in_.size()) {
      // Nothing to read: wait as a real stream would.
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s, 0.05)));
      return {};
    }
    size_t n = std::min(size, in_.size() - pos_);
    std::copy(in_.data() + pos_, in_.data() + pos_ + n, buf);
    pos_ += n;
    return {n, false};
  }
  void write(std::string_view data) override {
    wire::Decoder d;
    d.feed(data);
    while (auto m = d.next()) {
      if (wire::get_string(*m, "type") == "hello") {
        in_ += wire::encode(
            {{"type", "result"}, {"id", wire::get_u64(*m, "id")}, {"data", hello_data()}});
      }
    }
  }

 private:
  std::string in_ = wire::sentinel_line("b1");
  size_t pos_ = 0;
};

TEST(AgentLink, ASilentAgentIsAbandonedAfterTheSilenceLimit) {
  AgentLink link(std::make_unique<SilentAfterHello>(), "server (nas)");
  link.handshake(5);
  link.set_silence_limit(2);
  try {
    link.call("disk", {}, 600);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRemote);
    EXPECT_NE(e.hint().find("[timeouts] silence"), std::string::npos) << e.hint();
  }
  EXPECT_TRUE(link.abandoned());
  // Later calls do not wait on it again.
  const double t0 = monotonic_seconds();
  EXPECT_THROW(link.call("stats", {}, 600), Error);
  EXPECT_LT(monotonic_seconds() - t0, 1.0);
}

TEST(AgentLink, CancelNeverWaitsOnASilentAgent) {
  AgentLink link(std::make_unique<SilentAfterHello>(), "client (mac)");
  link.handshake(5);
  CancelToken cancel;
  link.set_default_cancel(&cancel);
  std::vector<double> waits;
  link.set_wait_observer(
      [&](const std::string&, double silent, double) { waits.push_back(silent); });
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    cancel.cancel();
  });
  const double t0 = monotonic_seconds();
  try {
    link.call("tcp_run", {}, 600);  // no cancel passed: the link's default applies
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled) << e.what();
  }
  t.join();
  // 3.5 s until the cancel, then at most the grace: not the call's 600 s.
  EXPECT_LT(monotonic_seconds() - t0, 3.5 + kCancelGrace + 1.0);
  EXPECT_TRUE(link.abandoned());
  EXPECT_FALSE(waits.empty());  // the progress line was told whom it waits on
  // A call after cancellation throws at once, without sending.
  EXPECT_THROW(link.call("stats", {}, 600), Error);
}

// A peer that answers hello, then only sends heartbeats (alive, but it never
// answers the request nor the cancel).
class HeartbeatsOnly : public ByteStream {
 public:
  ReadResult read(char* buf, size_t size, double timeout_s) override {
    if (pos_ == in_.size() && id_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s, 0.1)));
      in_ += wire::encode({{"type", "heartbeat"}, {"id", id_}});
    }
    if (pos_ == in_.size()) return {};
    size_t n = std::min(size, in_.size() - pos_);
    std::copy(in_.data() + pos_, in_.data() + pos_ + n, buf);
    pos_ += n;
    return {n, false};
  }
  void write(std::string_view data) override {
    wire::Decoder d;
    d.feed(data);
    while (auto m = d.next()) {
      const std::string type = wire::get_string(*m, "type");
      if (type == "hello") {
        in_ += wire::encode(
            {{"type", "result"}, {"id", wire::get_u64(*m, "id")}, {"data", hello_data()}});
      } else if (type != "cancel") {
        id_ = wire::get_u64(*m, "id");
      }
    }
  }

 private:
  std::string in_ = wire::sentinel_line("b1");
  size_t pos_ = 0;
  uint64_t id_ = 0;
};

TEST(AgentLink, CancelGraceHoldsAgainstAnAgentThatKeepsTalking) {
  AgentLink link(std::make_unique<HeartbeatsOnly>(), "server (nas)");
  link.handshake(5);
  link.set_silence_limit(30);
  CancelToken cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.cancel();
  });
  const double t0 = monotonic_seconds();
  try {
    link.call("disk", {}, 600, {}, &cancel);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled) << e.what();
  }
  t.join();
  // Heartbeats do not extend the grace: not the 30 s silence limit.
  EXPECT_LT(monotonic_seconds() - t0, 0.5 + kCancelGrace + 1.0);
  EXPECT_TRUE(link.abandoned());
}

TEST(SshHints, ChangedKeyIsRemovedFromTheFileItWasReadFrom) {
  EXPECT_EQ(keygen_remove_command("cp-server", ""), "ssh-keygen -R cp-server");
  EXPECT_EQ(keygen_remove_command("10.0.0.1", "/srv/lab/known_hosts"),
            "ssh-keygen -R 10.0.0.1 -f /srv/lab/known_hosts");
}

TEST(LocalEndpoint, RunsTheAgentBinary) {
  setenv("CHOKEPOINT_AGENT", AGENT_BIN, 1);
  std::vector<std::string> log;
  auto ep = Endpoint::open({"client", "local"}, [&](const std::string& l) { log.push_back(l); });
  EXPECT_EQ(ep->deployment(), "local");
  EXPECT_EQ(ep->default_data_address(), "127.0.0.1");
  EXPECT_GT(ep->agent().hello().pid, 0);
  EXPECT_NE(ep->agent().hello().pid, getpid());
}

TEST(LocalEndpoint, MissingAgentBinarySaysHowToFix) {
  setenv("CHOKEPOINT_AGENT", "/nonexistent/chokepoint-agent", 1);
  try {
    Endpoint::open({"client", "local"}, [](const std::string&) {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(describe(e).find("CHOKEPOINT_AGENT"), std::string::npos);
  }
  unsetenv("CHOKEPOINT_AGENT");
}

TEST(Sha256, KnownVector) {
  const std::string p = fs::temp_directory_path() / ("sha-test-" + std::to_string(getpid()));
  std::ofstream(p) << "abc";
  EXPECT_EQ(sha256_file(p), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fs::remove(p);
}

}  // namespace
}  // namespace cp::remote
