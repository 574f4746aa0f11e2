// What the pipeline's stages need of an agent: send one request, get its
// answer (with progress on the way), and what the last call looked like.
// AgentLink (agent_link.h) is the real one over SSH or a pipe; the runner's
// tests script answers behind it instead of starting agents. Only .cc files
// include this header (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/messages.h"
#include "core/progress.h"

namespace cp::remote {

class AgentPort {
 public:
  virtual ~AgentPort() = default;
  // One request: its answer's data, or Error (the agent's, kCancelled when
  // `cancel` was set, kRemote when the agent is gone or silent). `timeout_s`
  // is an inactivity limit.
  virtual boost::json::object call(const std::string& type, boost::json::object args,
                                   double timeout_s, const ProgressFn& progress = {},
                                   const CancelToken* cancel = nullptr) = 0;
  // The longest the agent stayed silent during the last call, s.
  virtual double last_call_max_silence() const = 0;
  // For messages ("server (cp-server)").
  virtual const std::string& name() const = 0;
  // The agent's hello answer.
  virtual const msg::Hello& hello() const = 0;
};

}  // namespace cp::remote
