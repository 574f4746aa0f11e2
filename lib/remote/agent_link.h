// The orchestrator's side of the wire protocol with one agent: waits for
// the sentinel, then makes request/response calls. Only .cc files include
// this header (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>

#include "core/clock.h"
#include "remote/stream.h"

namespace cp::remote {

namespace json = boost::json;

// Progress of a long request: bytes and seconds so far on the agent.
using ProgressFn = std::function<void(uint64_t bytes, double seconds)>;

class AgentLink {
 public:
  // `name` is used in messages ("server (cp-server)").
  AgentLink(std::unique_ptr<ByteStream> stream, std::string name);
  ~AgentLink();

  // Waits for the sentinel (skipping up to 64 KiB of login noise), checks
  // the protocol version, and says hello; returns the agent's hello data.
  json::object handshake(double timeout_s);

  // One request. `timeout_s` is an inactivity limit: progress messages from
  // the agent reset it. Errors the agent reports come back as cp::Error with
  // the agent's kind, message and hint, prefixed with this link's name.
  // When `cancel` is set during the call, sends "cancel" to the agent and
  // throws Error(kCancelled) once it answers (or after a grace period).
  json::object call(const std::string& type, json::object args, double timeout_s,
                    const ProgressFn& progress = {}, const CancelToken* cancel = nullptr);

  const std::string& name() const { return name_; }
  const json::object& hello() const { return hello_; }

 private:
  json::object next_message(double timeout_s, const CancelToken* cancel, bool* cancelled);
  [[noreturn]] void closed(const std::string& during);

  std::unique_ptr<ByteStream> stream_;
  std::string name_;
  struct DecoderBox;
  std::unique_ptr<DecoderBox> decoder_;
  uint64_t next_id_ = 1;
  json::object hello_;
};

}  // namespace cp::remote
