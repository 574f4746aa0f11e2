#include "remote/agent_link.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/wire.h"

namespace cp::remote {

struct AgentLink::DecoderBox {
  wire::Decoder decoder;
};

AgentLink::AgentLink(std::unique_ptr<ByteStream> stream, std::string name)
    : stream_(std::move(stream)),
      name_(std::move(name)),
      decoder_(std::make_unique<DecoderBox>()) {}

AgentLink::~AgentLink() = default;

void AgentLink::closed(const std::string& during) {
  std::string err = stream_->stderr_text();
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  throw Error(ErrorKind::kRemote,
              fmt::format("{}: the agent's channel closed {}{}", name_, during,
                          err.empty() ? "" : "; it said: " + err),
              "check that the agent can run on that host (`chokepoint-agent --version`)");
}

json::object AgentLink::handshake(double timeout_s) {
  std::string line;
  size_t skipped = 0;
  const double deadline = monotonic_seconds() + timeout_s;
  char c;
  // Byte by byte until the sentinel line: anything after it is framed data
  // and must stay in the stream for the decoder.
  for (;;) {
    const double left = deadline - monotonic_seconds();
    if (left <= 0) {
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: no agent sentinel within {:.0f} s{}", name_, timeout_s,
                              line.empty() ? "" : "; last output: '" + line + "'"),
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
  hello_ = call("hello", {}, timeout_s);
  return hello_;
}

json::object AgentLink::next_message(double timeout_s, const CancelToken* cancel, bool* cancelled) {
  const double deadline = monotonic_seconds() + timeout_s;
  char buf[65536];
  for (;;) {
    if (auto msg = decoder_->decoder.next()) return std::move(*msg);
    if (cancel && cancel->cancelled() && !*cancelled) {
      *cancelled = true;
      stream_->write(wire::encode({{"type", "cancel"}, {"id", 0}}));
    }
    const double left = deadline - monotonic_seconds();
    if (left <= 0) {
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: the agent said nothing for {:.0f} s", name_, timeout_s),
                  "the host may be overloaded or the network down; rerun, or raise the timeout");
    }
    auto r = stream_->read(buf, sizeof buf, std::min(left, 0.2));
    if (r.eof) closed("mid-request");
    if (r.n) decoder_->decoder.feed(std::string_view(buf, r.n));
  }
}

json::object AgentLink::call(const std::string& type, json::object args, double timeout_s,
                             const ProgressFn& progress, const CancelToken* cancel) {
  const uint64_t id = next_id_++;
  args["type"] = type;
  args["id"] = id;
  stream_->write(wire::encode(std::move(args)));
  bool cancelled = false;
  for (;;) {
    json::object msg;
    try {
      // After a cancel, give the agent a few seconds to stop and answer.
      msg = next_message(cancelled ? 10.0 : timeout_s, cancel, &cancelled);
    } catch (const Error& e) {
      if (cancelled) throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      if (e.kind() == ErrorKind::kPeer) {
        throw Error(ErrorKind::kPeer,
                    fmt::format("{}: bad message from agent: {}", name_, e.what()), e.hint());
      }
      throw;
    }
    const std::string mtype = wire::get_string(msg, "type");
    const uint64_t mid = wire::get_u64(msg, "id");
    if (mtype == "progress" && mid == id) {
      if (progress) progress(wire::get_u64(msg, "bytes"), wire::get_double(msg, "seconds"));
      continue;
    }
    if (mtype == "error" && (mid == id || mid == 0)) {
      const auto& err = wire::get_object(msg, "error");
      const std::string kind = wire::get_string(err, "kind");
      if (cancelled || kind == "cancelled") {
        throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      }
      ErrorKind k = ErrorKind::kRemote;
      for (ErrorKind c : {ErrorKind::kUsage, ErrorKind::kConfig, ErrorKind::kPeer, ErrorKind::kIo,
                          ErrorKind::kUnsupported}) {
        if (kind == to_string(c)) k = c;
      }
      throw Error(k, fmt::format("{}: {}", name_, wire::get_string(err, "message")),
                  wire::opt_string(err, "hint"));
    }
    if (mtype == "result" && mid == id) {
      if (cancelled) throw Error(ErrorKind::kCancelled, fmt::format("{}: cancelled", name_));
      return wire::get_object(msg, "data");
    }
    // A late answer to an earlier, abandoned request: skip it.
    if (mid < id) continue;
    throw Error(ErrorKind::kPeer,
                fmt::format("{}: unexpected message '{}' (id {}) while waiting for '{}' (id {})",
                            name_, mtype, mid, type, id));
  }
}

}  // namespace cp::remote
