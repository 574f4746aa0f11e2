#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/error.h"
#include "core/messages_json.h"
#include "link/agent_port.h"
#include "transfer/driver.h"
#include "transfer/share_url.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentPort;

StageScope::~StageScope() {
  if (!ended_) obs_.on_stage_end(id_, kInterrupted, "interrupted");
}

void StageScope::end(const std::string& status, const std::string& error) {
  ended_ = true;
  obs_.on_stage_end(id_, status, error);
}

StageRecord new_stage(std::string layer, std::string where, const boost::json::object& params) {
  StageRecord rec;
  rec.layer = std::move(layer);
  rec.where = std::move(where);
  rec.params_json = boost::json::serialize(params);
  return rec;
}

void run_series(StageContext& ctx, StageRecord rec, const std::string& what,
                const std::function<void(StageScope&)>& body,
                const std::function<void()>& on_failure) {
  rec.started_at = wall_seconds();  // the stage starts when its record is begun
  StageScope stage(ctx.obs, rec);
  try {
    body(stage);
    stage.end(kComplete);
  } catch (const Error& e) {
    // Cancellation ends the run (the scope marks the stage interrupted); any
    // other error ends this stage, and the next one runs.
    if (e.kind() == ErrorKind::kCancelled) throw;
    if (on_failure) on_failure();
    stage.end(kFailed, describe(e));
    ctx.obs.on_note(fmt::format("{} failed: {}", what, describe(e)));
  }
}

// A sample during which an agent said nothing for longer than [timeouts]
// stall (stopped, a frozen host) timed the stall, not the layer: it is kept
// with the reason as its error and "stalled": true in its details, so the
// figures leave it out and the run is partial. `over` is the sample's time
// past its planned duration (TCP), s. Returns whether it flagged it.
bool flag_stall(const Plan& plan, stored::Sample& s, const std::vector<const AgentPort*>& links,
                double over, RunObserver& obs) {
  if (!s.error.empty()) return false;
  double silent = 0;
  for (const AgentPort* l : links) {
    if (l->last_call_max_silence() > plan.stall_after && l->last_call_max_silence() > silent) {
      silent = l->last_call_max_silence();
      s.error = fmt::format("stalled: {} said nothing for {:.1f} s during this sample", l->name(),
                            silent);
    }
  }
  if (s.error.empty() && over > plan.stall_after) {
    s.error =
        fmt::format("stalled: took {:.1f} s, {:.1f} s over its planned duration", s.seconds, over);
  }
  if (s.error.empty()) return false;
  s.details.stalled = true;
  s.details.silent_seconds = silent;
  obs.on_note(s.error + "; this sample is left out of the figures");
  return true;
}

msg::PrepareResult prepare_dirs(AgentPort& agent, const msg::PrepareRequest& req, RunObserver& obs,
                                const std::string& who) {
  auto made = ask<msg::PrepareResult>(agent, "prepare", req, 30);
  // The orphan cleanup the agent did on the way (run dirs of agents that are gone).
  for (const auto& s : made.swept) {
    obs.on_note(fmt::format("{}: removed {} left by an earlier run ({})", who, s.path, s.reason));
  }
  // And what it left alone: named like a run directory, not provably its own.
  for (const auto& s : made.refused) {
    obs.on_note(fmt::format("{}: left {} alone ({}): not a run directory of the agent's user", who,
                            s.path, s.refused));
  }
  return made;
}

msg::CpuStartRequest server_connection(const SharePlan& share, const Agents& a) {
  msg::CpuStartRequest q;
  if (share.url.find("://") == std::string::npos || a.client_address.empty()) return q;
  const transfer::DriverSpec* spec = transfer::find_driver_spec(share.driver);
  const transfer::ShareUrl url = transfer::parse_share_url(share.url);
  q.port = url.port > 0 ? url.port : spec ? spec->default_port : 0;
  if (q.port > 0) q.peer = a.client_address;
  return q;
}

msg::ShareRef share_message(const SharePlan& share, const Agents& a) {
  msg::ShareRef ref{share.name, share.url, share.driver, share.user, {}, {}};
  if (auto it = a.passwords.find(share.name); it != a.passwords.end()) ref.password = it->second;
  for (const auto& [k, v] : share.options) ref.options[k] = v;
  return ref;
}

// The server agent's run directory inside the share (made writable for the
// protocol server's user); its name, with a '/', prefixes remote paths.
std::string share_run_prefix(Agents& a, const SharePlan& share, RunObserver& obs) {
  const msg::PrepareResult p =
      prepare_dirs(a.server, {{share.server_dir}, /*shared=*/true, a.run_id}, obs, kServer);
  const auto it = p.dirs.find(share.server_dir);
  if (it == p.dirs.end()) {
    throw Error(
        ErrorKind::kPeer,
        fmt::format("{}: prepare made no run directory in '{}'", a.server.name(), share.server_dir),
        "the orchestrator and agent builds differ: redeploy the agent");
  }
  const std::string& made = it->second;
  return made.substr(made.rfind('/') + 1) + "/";
}

}  // namespace cp::pipeline
