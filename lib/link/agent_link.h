// The orchestrator's side of the wire protocol with one agent: waits for
// the sentinel, then makes request/response calls. Only .cc files include
// this header (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>

#include "core/clock.h"
#include "link/agent_port.h"
#include "link/stream.h"

namespace cp::remote {

namespace json = boost::json;

// Called about every 0.2 s while the agent has said nothing for `silent_s`
// (>= 3 s) during a call; `limit_s` is when the link gives up on it.
using WaitFn = std::function<void(const std::string& name, double silent_s, double limit_s)>;

// After a cancel, how long a call waits for the agent's answer before it
// abandons the agent (s): a run ends within 2 s of Ctrl-C whatever the agent does.
inline constexpr double kCancelGrace = 0.5;

// How long one request may take in all, whatever the agent sends meanwhile:
// heartbeats and progress reset only the silence limit, never this. Its
// deadline is `factor` x its planned duration + a floor of `floor_limits`
// inactivity limits (the silence limit, or the call's own timeout). The
// planned duration is read off the request: its durations ("seconds",
// "timeout", "confirm_s", s) plus its bytes ("size", "bytes"; a request that
// names none, e.g. a read of a file written before, the most bytes any
// request on this link named) at `slowest_rate`.
struct DeadlinePolicy {
  double factor = 4;
  double floor_limits = 10;            // x the inactivity limit: 300 s at the default 30 s silence
  double slowest_rate = 1e6;           // bytes/s (8 Mbit/s; factor 4: requests cut below 250 kB/s)
  double cancel_grace = kCancelGrace;  // s
};
// The deadline of one request with arguments `args`, s after it is sent.
double request_deadline(const DeadlinePolicy& policy, double limit_s, const json::object& args,
                        uint64_t largest_bytes);

class AgentLink : public AgentPort {
 public:
  // `name` is used in messages ("server (cp-server)"). `clock` (monotonic
  // s; null: the steady clock) times the handshake, silences and deadlines;
  // it must outlive the link.
  AgentLink(std::unique_ptr<ByteStream> stream, std::string name, const Clock* clock = nullptr);
  ~AgentLink() override;

  // Waits for the sentinel (skipping up to 64 KiB of login noise), checks
  // the protocol version, and says hello; returns the agent's hello.
  const msg::Hello& handshake(double timeout_s);

  // One request. `timeout_s` is an inactivity limit (the silence limit
  // replaces it when set): progress and heartbeat messages from the agent
  // reset it. The request's deadline (DeadlinePolicy) does not move: past
  // it the agent is abandoned with Error(kRemote). Errors the agent reports come back as cp::Error
  // with the agent's kind, message and hint, prefixed with this link's name. When `cancel` or the
  // link's default token is set during the call, sends "cancel" to the agent and throws
  // Error(kCancelled) once it answers, or after the policy's cancel_grace; a call made after
  // cancellation throws at once. An agent silent past the limit is abandoned: this call and every
  // later one throw Error(kRemote) without waiting.
  json::object call(const std::string& type, json::object args, double timeout_s,
                    const ProgressFn& progress = {}, const CancelToken* cancel = nullptr) override;

  // Agents send a heartbeat every second while serving a request: an agent
  // silent for `seconds` is stopped (or its host or network is), not slow.
  // 0: each call's own timeout.
  void set_silence_limit(double seconds) { silence_limit_ = seconds; }
  // The token calls use when they are given none (the run's Ctrl-C).
  void set_default_cancel(const CancelToken* cancel) { default_cancel_ = cancel; }
  void set_wait_observer(WaitFn fn) { wait_ = std::move(fn); }
  void set_deadline_policy(const DeadlinePolicy& p) { policy_ = p; }
  // The last call's deadline, s after it was sent.
  double last_call_deadline() const { return last_deadline_; }
  // The longest the agent stayed silent during the last call, s (from the
  // request to its first message, and between messages).
  double last_call_max_silence() const override { return last_max_silence_; }
  // The agent was abandoned (silent past the limit, or cancelled without an answer).
  bool abandoned() const { return !abandoned_.empty(); }

  const std::string& name() const override { return name_; }
  const msg::Hello& hello() const override { return hello_; }

 private:
  struct CallState;
  json::object next_message(CallState& st);
  [[noreturn]] void closed(const std::string& during);

  std::unique_ptr<ByteStream> stream_;
  std::string name_;
  const Clock* clock_;
  struct DecoderBox;
  std::unique_ptr<DecoderBox> decoder_;
  uint64_t next_id_ = 1;
  msg::Hello hello_;
  double silence_limit_ = 0;
  const CancelToken* default_cancel_ = nullptr;
  WaitFn wait_;
  double last_max_silence_ = 0;
  DeadlinePolicy policy_;
  uint64_t largest_bytes_ = 0;  // the most bytes a request on this link named
  double last_deadline_ = 0;
  std::string abandoned_;  // why, when the agent was given up on
};

}  // namespace cp::remote
