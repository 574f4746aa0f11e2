// The link's handshake against scripted streams, and a local Endpoint (the
// agent binary as a subprocess).
#include "link/agent_link.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/testing/error_of.h"
#include "core/wire.h"
#include "remote/endpoint.h"
#include "remote/ssh.h"

namespace cp::remote {
namespace {

namespace fs = std::filesystem;
using cp::testing::error_of;

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

// A fake agent behind the link: answers hello with hello_data(), keeps the id
// of the latest other request (cancels aside) in id_, and hands out in_.
class FakeAgent : public ByteStream {
 public:
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

 protected:
  // Up to size bytes of in_ from pos_ on.
  ReadResult take(char* buf, size_t size) {
    const size_t n = std::min(size, in_.size() - pos_);
    std::copy(in_.data() + pos_, in_.data() + pos_ + n, buf);
    pos_ += n;
    return {n, false};
  }
  std::string in_ = wire::sentinel_line("b1");
  size_t pos_ = 0;
  uint64_t id_ = 0;
};

class ScriptedStream : public FakeAgent {
 public:
  explicit ScriptedStream(std::string bytes) { in_ = std::move(bytes); }
  ReadResult read(char* buf, size_t size, double) override {
    if (pos_ == in_.size()) return {0, eof_when_done_};
    return take(buf, size);
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
  error_of([&] { link.handshake(5); }, ErrorKind::kPeer);
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
class SilentAfterHello : public FakeAgent {
 public:
  ReadResult read(char* buf, size_t size, double timeout_s) override {
    if (pos_ == in_.size()) {
      // Nothing to read: wait as a real stream would.
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s, 0.05)));
      return {};
    }
    return take(buf, size);
  }
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
  // No cancel passed: the link's default applies.
  error_of([&] { link.call("tcp_run", {}, 600); }, ErrorKind::kCancelled);
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
class HeartbeatsOnly : public FakeAgent {
 public:
  ReadResult read(char* buf, size_t size, double timeout_s) override {
    if (pos_ == in_.size() && id_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s, 0.1)));
      in_ += wire::encode({{"type", "heartbeat"}, {"id", id_}});
    }
    if (pos_ == in_.size()) return {};
    return take(buf, size);
  }
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
  error_of([&] { link.call("disk", {}, 600, {}, &cancel); }, ErrorKind::kCancelled);
  t.join();
  // Heartbeats do not extend the grace: not the 30 s silence limit.
  EXPECT_LT(monotonic_seconds() - t0, 0.5 + kCancelGrace + 1.0);
  EXPECT_TRUE(link.abandoned());
}

// ---- a scripted hostile agent, on an injected clock ------------------------

class FakeClock : public Clock {
 public:
  double now() const override { return t; }
  double t = 1000;
};

// A hostile peer behind the link: answers hello, then answers each request
// with what `script` makes of it, forever. Each read advances the fake clock
// by the time the link would have waited (its timeout, at most 0.2 s), so no
// test waits on the wall clock.
class HostilePeer : public FakeAgent {
 public:
  using Script = std::function<std::string(uint64_t id, double t)>;
  HostilePeer(FakeClock& clock, Script script) : clock_(clock), script_(std::move(script)) {}
  ReadResult read(char* buf, size_t size, double timeout_s) override {
    if (pos_ == in_.size()) {
      clock_.t += timeout_s;
      ++reads_;
      if (id_ == 0) return {};
      in_ = script_(id_, clock_.t);
      pos_ = 0;
      if (in_.empty()) return {};
    }
    return take(buf, size);
  }
  int reads_ = 0;

 private:
  FakeClock& clock_;
  Script script_;
};

// A heartbeat every second of fake time.
HostilePeer::Script heartbeats() {
  auto last = std::make_shared<double>(0);
  return [last](uint64_t id, double t) {
    if (t - *last < 1) return std::string();
    *last = t;
    return wire::encode({{"type", "heartbeat"}, {"id", id}});
  };
}

Error error_of_call(AgentLink& link, const std::string& type, json::object args) {
  try {
    link.call(type, std::move(args), 600);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the call returned";
  return Error(ErrorKind::kUsage, "");
}

TEST(SecurityAgentLink, APeerThatOnlyHeartbeatsEndsTheRequestByItsDeadline) {
  FakeClock clock;
  auto peer = std::make_unique<HostilePeer>(clock, heartbeats());
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  link.set_silence_limit(30);
  // A disk write of 100 MB: deadline 4 x (100 MB at 1 MB/s) + 10 x 30 s.
  const json::object args{{"dir", "/d"}, {"op", "write"}, {"name", "f"}, {"size", 100'000'000}};
  const double expected = request_deadline(DeadlinePolicy{}, 30, args, 0);
  EXPECT_DOUBLE_EQ(expected, 4 * 100 + 10 * 30);
  const double t0 = clock.t;
  const Error e = error_of_call(link, "disk", args);
  EXPECT_EQ(e.kind(), ErrorKind::kRemote) << e.what();
  EXPECT_DOUBLE_EQ(link.last_call_deadline(), expected);
  // Ended at its deadline (fake s), never before, and well past the 30 s
  // silence limit the heartbeats kept resetting.
  EXPECT_GE(clock.t - t0, expected);
  EXPECT_LT(clock.t - t0, expected + 1);
  EXPECT_LT(link.last_call_max_silence(), 30);
  EXPECT_TRUE(link.abandoned());
  // Later calls do not wait on it again.
  const double t1 = clock.t;
  EXPECT_EQ(error_of_call(link, "stats", {}).kind(), ErrorKind::kRemote);
  EXPECT_EQ(clock.t, t1);
}

// Progress does not move the deadline either (a peer can report bytes forever).
TEST(SecurityAgentLink, APeerThatOnlyReportsProgressEndsTheRequestByItsDeadline) {
  FakeClock clock;
  auto last = std::make_shared<double>(0);
  auto peer = std::make_unique<HostilePeer>(clock, [last](uint64_t id, double t) {
    if (t - *last < 0.5) return std::string();
    *last = t;
    return wire::encode({{"type", "progress"}, {"id", id}, {"bytes", 1}, {"seconds", t}});
  });
  AgentLink link(std::move(peer), "client (mac)", &clock);
  link.handshake(5);
  link.set_silence_limit(5);
  const json::object args{{"seconds", 2.0}};  // a 2 s TCP sample
  const double t0 = clock.t;
  int progress = 0;
  try {
    link.call("tcp_run", args, 600, [&](uint64_t, double) { ++progress; });
    FAIL() << "returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRemote);
  }
  EXPECT_DOUBLE_EQ(link.last_call_deadline(), 4 * 2 + 10 * 5);
  EXPECT_GE(clock.t - t0, link.last_call_deadline());
  EXPECT_LT(clock.t - t0, link.last_call_deadline() + 1);
  EXPECT_GT(progress, 50);
}

// A read that names no size is planned at the most bytes this link moved
// (the file's write came first).
TEST(SecurityAgentLink, AReadWithoutASizeIsPlannedAtTheLargestSizeSoFar) {
  const DeadlinePolicy p;
  EXPECT_DOUBLE_EQ(request_deadline(p, 30, {{"op", "read"}}, 0), 300);
  EXPECT_DOUBLE_EQ(request_deadline(p, 30, {{"op", "read"}}, 50'000'000), 4 * 50 + 300);
  EXPECT_DOUBLE_EQ(request_deadline(p, 30, {{"size", -5}, {"seconds", "x"}}, 0), 300);
}

// A frame that never completes (its header says 1 MiB, its bytes trickle):
// the buffer stays under the cap and the request ends by its deadline.
TEST(SecurityAgentLink, APeerThatNeverCompletesAFrameEndsByTheDeadline) {
  FakeClock clock;
  auto started = std::make_shared<bool>(false);
  auto peer = std::make_unique<HostilePeer>(clock, [started](uint64_t, double) {
    const uint32_t n = wire::kMaxFrame;
    std::string out;
    if (!*started) out = {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
    *started = true;
    return out + std::string(64, 'x');  // 64 bytes a read: 1 MiB takes ~3 fake hours
  });
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  link.set_silence_limit(30);
  const Error e = error_of_call(link, "facts", {});
  EXPECT_EQ(e.kind(), ErrorKind::kRemote) << e.what();
  EXPECT_DOUBLE_EQ(link.last_call_deadline(), 300);
}

TEST(SecurityAgentLink, AFrameHeaderOverTheCapIsAPeerError) {
  FakeClock clock;
  auto peer = std::make_unique<HostilePeer>(clock, [](uint64_t, double) {
    const uint32_t n = 64u << 20;
    return std::string{char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  });
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  EXPECT_EQ(error_of_call(link, "facts", {}).kind(), ErrorKind::kPeer);
}

// An error frame missing its message is the peer's error naming the field.
TEST(SecurityAgentLink, AnErrorFrameWithoutItsMessageNamesTheField) {
  FakeClock clock;
  auto peer = std::make_unique<HostilePeer>(clock, [](uint64_t id, double) {
    return wire::encode({{"type", "error"}, {"id", id}, {"error", {{"kind", "io"}}}});
  });
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  const Error e = error_of_call(link, "disk", {});
  EXPECT_EQ(e.kind(), ErrorKind::kPeer);
  EXPECT_NE(std::string(e.what()).find("'message'"), std::string::npos) << e.what();
}

// What the agent says in an error is printed and stored: control characters
// escaped, its length capped.
TEST(SecurityAgentLink, AnAgentsErrorTextIsEscapedAndCapped) {
  FakeClock clock;
  auto peer = std::make_unique<HostilePeer>(clock, [](uint64_t id, double) {
    return wire::encode({{"type", "error"},
                         {"id", id},
                         {"error",
                          {{"kind", "io"},
                           {"message", "disk full\x1b]0;owned\x07" + std::string(50000, 'A')},
                           {"hint", "\x1b[2J"}}}});
  });
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  const Error e = error_of_call(link, "disk", {});
  EXPECT_EQ(e.kind(), ErrorKind::kIo);
  const std::string what = e.what();
  EXPECT_EQ(what.find('\x1b'), std::string::npos);
  EXPECT_EQ(what.find('\x07'), std::string::npos);
  EXPECT_EQ(e.hint().find('\x1b'), std::string::npos);
  EXPECT_LT(what.size(), wire::kMaxPrintedText + 200);
}

// A reply missing a field its codec needs: the peer's error naming it.
TEST(SecurityAgentLink, AReplyMissingAFieldNamesIt) {
  FakeClock clock;
  auto peer = std::make_unique<HostilePeer>(clock, [](uint64_t id, double) {
    return wire::encode({{"type", "result"}, {"id", id}, {"data", {{"bytes", 5}}}});
  });
  AgentLink link(std::move(peer), "server (nas)", &clock);
  link.handshake(5);
  try {
    msg::decode<msg::DiskResult>(link.call("disk", {}, 60), "disk");
    FAIL() << "decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    EXPECT_NE(std::string(e.what()).find("'seconds'"), std::string::npos) << e.what();
  }
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
