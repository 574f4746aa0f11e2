#include "link/agent_link.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/wire.h"

namespace cp::remote {

namespace {

// A frame's own fields through their codec: a missing or mistyped one is the
// peer's error, named with the link.
template <class T>
T decode_frame(const json::value& v, const char* what, const std::string& link) {
  try {
    return msg::decode<T>(v, what);
  } catch (const Error& e) {
    throw Error(ErrorKind::kPeer, fmt::format("{}: bad message from agent: {}", link, e.what()),
                e.hint());
  }
}

const Clock& steady_clock() {
  static const SteadyClock c;
  return c;
}

// A non-negative number field of a request, 0 when absent or not one.
double number_field(const json::object& args, const char* key) {
  const json::value* v = args.if_contains(key);
  if (!v || !v->is_number()) return 0;
  const double d = v->to_number<double>();
  return d > 0 ? d : 0;
}

// The bytes a request names it will move (its "size" or "bytes"), 0 when none.
uint64_t request_bytes(const json::object& args) {
  return static_cast<uint64_t>(std::max(number_field(args, "size"), number_field(args, "bytes")));
}

}  // namespace

double request_deadline(const DeadlinePolicy& p, double limit_s, const json::object& args,
                        uint64_t largest_bytes) {
  uint64_t bytes = request_bytes(args);
  if (bytes == 0) bytes = largest_bytes;
  const double planned = number_field(args, "seconds") + number_field(args, "timeout") +
                         number_field(args, "confirm_s") +
                         static_cast<double>(bytes) / p.slowest_rate;
  return p.factor * planned + p.floor_limits * limit_s;
}

struct AgentLink::DecoderBox {
  wire::Decoder decoder;
};

AgentLink::AgentLink(std::unique_ptr<ByteStream> stream, std::string name, const Clock* clock)
    : stream_(std::move(stream)),
      name_(std::move(name)),
      clock_(clock ? clock : &steady_clock()),
      decoder_(std::make_unique<DecoderBox>()) {}

AgentLink::~AgentLink() = default;

void AgentLink::closed(const std::string& during) {
  std::string err = stream_->stderr_text();
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  throw Error(ErrorKind::kRemote,
              fmt::format("{}: the agent's channel closed {}{}", name_, during,
                          err.empty() ? "" : "; it said: " + wire::printable(err)),
              during == "before it started"
                  ? "check that the agent can run on that host (`chokepoint-agent --version`)"
                  : "the agent or its SSH session ended mid-run (killed, or the host or sshd "
                    "restarted); rerun, and check the host's logs (dmesg, journalctl) if it "
                    "happens again");
}

const msg::Hello& AgentLink::handshake(double timeout_s) {
  std::string line;
  size_t skipped = 0;
  const double deadline = clock_->now() + timeout_s;
  char c;
  // Byte by byte until the sentinel line: anything after it is framed data
  // and must stay in the stream for the decoder.
  for (;;) {
    const double left = deadline - clock_->now();
    if (left <= 0) {
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: no agent sentinel within {:.0f} s{}", name_, timeout_s,
                              line.empty() ? "" : "; last output: '" + wire::printable(line) + "'"),
                  "run the agent by hand on that host to see why it does not start");
    }
    auto r = stream_->read(&c, 1, left);
    if (r.eof) closed("before it started");
    if (r.n == 0) continue;
    if (c != '\n') {
      line.push_back(c);
      if (line.size() > 4096) line.erase(0, 2048);
      if (++skipped > (64u << 10)) {
        throw Error(ErrorKind::kRemote,
                    fmt::format("{}: over 64 KiB of output and no agent sentinel", name_),
                    "make the remote shell quiet for non-interactive sessions");
      }
      continue;
    }
    if (auto s = wire::parse_sentinel(line)) {
      if (s->proto != wire::kProtocolVersion) {
        throw Error(ErrorKind::kRemote,
                    fmt::format("{}: the agent speaks protocol {}, this chokepoint speaks {}",
                                name_, s->proto, wire::kProtocolVersion),
                    "install the same chokepoint version on that host, or remove its "
                    "chokepoint-agent from PATH so this build's agent is uploaded");
      }
      break;
    }
    line.clear();
  }
  try {
    hello_ = msg::decode<msg::Hello>(call("hello", {}, timeout_s), "hello");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kPeer) throw;
    throw Error(ErrorKind::kPeer, fmt::format("{}: bad hello from agent: {}", name_, e.what()),
                e.hint());
  }
  return hello_;
}

// One call in flight: its limits and what happened so far (monotonic s).
struct AgentLink::CallState {
  std::string type;
  double limit = 0;       // inactivity limit, s
  double deadline = 0;    // monotonic s when the request must be done
  double deadline_s = 0;  // the same, s after it was sent (for messages)
  const CancelToken* cancel = nullptr;
  double cancelled_at = 0;  // when this call sent "cancel"; 0 not yet
  double silent_since = 0;  // when the agent last sent anything
};

json::object AgentLink::next_message(CallState& st) {
  char buf[65536];
  for (;;) {
    if (auto msg = decoder_->decoder.next()) return std::move(*msg);
    const double now = clock_->now();
    const bool cancel_now =
        (st.cancel && st.cancel->cancelled()) || (default_cancel_ && default_cancel_->cancelled());
    if (cancel_now && st.cancelled_at == 0) {
      st.cancelled_at = now;
      try {
        stream_->write(wire::encode({{"type", "cancel"}, {"id", 0}}));
      } catch (const Error&) {
        st.cancelled_at = now - policy_.cancel_grace;  // the channel is gone: nothing will answer
      }
    }
    // Never wait on a peer after Ctrl-C: a short grace from the cancel, then
    // abandon it, however chatty it stays.
    double until = std::min(st.silent_since + st.limit, st.deadline);
    if (st.cancelled_at > 0) until = std::min(until, st.cancelled_at + policy_.cancel_grace);
    const double left = until - now;
    if (left <= 0) {
      if (st.cancelled_at > 0) {
        abandoned_ = "it did not answer a cancel";
        throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      }
      if (now >= st.deadline) {
        abandoned_ = fmt::format("'{}' ran past its {:.0f} s deadline", st.type, st.deadline_s);
        throw Error(ErrorKind::kRemote,
                    fmt::format("{}: the agent did not finish '{}' within its deadline of "
                                "{:.0f} s (it kept sending heartbeats or progress, but no answer)",
                                name_, st.type, st.deadline_s),
                    "the agent is stuck, or is not chokepoint's; check the host (`ps -o "
                    "stat,pid,args -C chokepoint-agent`) and rerun");
      }
      abandoned_ = fmt::format("it said nothing for {:.0f} s", st.limit);
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: the agent sent nothing for {:.0f} s, not even its heartbeat: "
                              "it is stopped, or its host or the network to it is down",
                              name_, st.limit),
                  "check the host (is chokepoint-agent stopped? `ps -o stat,pid,args -C "
                  "chokepoint-agent`) and rerun; for a host that pauses longer, raise "
                  "[timeouts] silence in the plan");
    }
    const double silent = now - st.silent_since;
    if (wait_ && silent >= 3 && st.cancelled_at == 0) wait_(name_, silent, st.limit);
    auto r = stream_->read(buf, sizeof buf, std::min(left, 0.2));
    if (r.eof) {
      if (st.cancelled_at > 0)
        throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      closed("mid-request");
    }
    if (r.n) {
      const double t = clock_->now();
      last_max_silence_ = std::max(last_max_silence_, t - st.silent_since);
      st.silent_since = t;
      decoder_->decoder.feed(std::string_view(buf, r.n));
    }
  }
}

json::object AgentLink::call(const std::string& type, json::object args, double timeout_s,
                             const ProgressFn& progress, const CancelToken* cancel) {
  // The call's own token and the link's default (the run's Ctrl-C) both cancel it.
  if ((cancel && cancel->cancelled()) || (default_cancel_ && default_cancel_->cancelled())) {
    throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
  }
  if (!abandoned_.empty()) {
    throw Error(ErrorKind::kRemote,
                fmt::format("{}: the agent was abandoned earlier ({})", name_, abandoned_),
                "see the first error of this run");
  }
  CallState st;
  st.type = type;
  st.limit = silence_limit_ > 0 ? silence_limit_ : timeout_s;
  st.cancel = cancel;
  st.deadline_s = request_deadline(policy_, st.limit, args, largest_bytes_);
  largest_bytes_ = std::max(largest_bytes_, request_bytes(args));
  last_deadline_ = st.deadline_s;
  const uint64_t id = next_id_++;
  args["type"] = type;
  args["id"] = id;
  stream_->write(wire::encode(std::move(args)));
  last_max_silence_ = 0;
  st.silent_since = clock_->now();
  st.deadline = st.silent_since + st.deadline_s;
  double& cancelled_at = st.cancelled_at;
  for (;;) {
    json::object msg;
    try {
      msg = next_message(st);
    } catch (const Error& e) {
      if (cancelled_at > 0) throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      if (e.kind() == ErrorKind::kPeer) {
        throw Error(ErrorKind::kPeer,
                    fmt::format("{}: bad message from agent: {}", name_, e.what()), e.hint());
      }
      throw;
    }
    const wire::Envelope env = wire::envelope(msg);
    const std::string& mtype = env.type;
    const uint64_t mid = env.id;
    if (mtype == "heartbeat") continue;  // alive; any id (it may still finish an abandoned one)
    if (mtype == "progress" && mid == id) {
      const auto p = decode_frame<msg::Progress>(msg, "progress", name_);
      if (progress) progress(p.bytes, p.seconds);
      continue;
    }
    if (mtype == "error" && (mid == id || mid == 0)) {
      const json::value* ev = msg.if_contains("error");
      const auto err = decode_frame<msg::ErrorInfo>(ev ? *ev : json::value(), "error", name_);
      const std::string& kind = err.kind;
      if (cancelled_at > 0 || kind == "cancelled") {
        throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      }
      ErrorKind k = ErrorKind::kRemote;
      for (ErrorKind c : {ErrorKind::kUsage, ErrorKind::kConfig, ErrorKind::kPeer, ErrorKind::kIo,
                          ErrorKind::kUnsupported}) {
        if (kind == to_string(c)) k = c;
      }
      // The agent's words, printed and stored: capped, control characters escaped.
      throw Error(k, fmt::format("{}: {}", name_, wire::printable(err.message)),
                  wire::printable(err.hint));
    }
    if (mtype == "result" && mid == id) {
      if (cancelled_at > 0) throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      const json::value* data = msg.if_contains("data");
      if (!data || !data->is_object()) {
        throw Error(ErrorKind::kPeer,
                    fmt::format("{}: bad message from agent: message 'result': field 'data' "
                                "missing or not an object",
                                name_),
                    "the orchestrator and agent builds differ: redeploy the agent");
      }
      return data->as_object();
    }
    // A late answer to an earlier, abandoned request: skip it.
    if (mid < id) continue;
    throw Error(ErrorKind::kPeer,
                fmt::format("{}: unexpected message '{}' (id {}) while waiting for '{}' (id {})",
                            name_, wire::printable(mtype, 64), mid, type, id));
  }
}

}  // namespace cp::remote
