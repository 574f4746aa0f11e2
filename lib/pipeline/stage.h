// What every stage of a run shares: its context, the one series runner that
// owns the stage record (begun, ended complete, failed with a note, or
// interrupted on cancellation), and the helpers several stages use. Each stage
// lives in its own file under stages/; runner.cc lists them in a table.
// Internal to the pipeline library (it brings in Boost.JSON's object).
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/messages_json.h"
#include "core/stored_run.h"
#include "link/agent_port.h"
#include "pipeline/runner.h"

namespace cp::pipeline {

// Inactivity limits when the plan's [timeouts] silence is not applied to the
// links (agents send a heartbeat every second, progress every 0.5 s), s.
inline constexpr double kCallTimeout = 120;

inline constexpr const char* kServer = "server";
inline constexpr const char* kClient = "client";

struct StageContext {
  const Plan& plan;
  Agents& agents;
  RunObserver& obs;
  const CancelToken& cancel;

  // The agent and the disk directory of one end (`where`: kServer | kClient).
  remote::AgentPort& agent_on(const std::string& where) const {
    return where == kServer ? agents.server : agents.client;
  }
  const std::string& disk_dir_on(const std::string& where) const {
    return where == kServer ? plan.server.disk_dir : plan.client.disk_dir;
  }
};

// A stage's record from begin to end; one never ended is marked interrupted.
class StageScope {
 public:
  StageScope(RunObserver& obs, const StageRecord& rec) : obs_(obs) {
    id_ = obs_.on_stage_begin(rec);
  }
  ~StageScope();
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;
  int64_t id() const { return id_; }
  void end(const std::string& status, const std::string& error = {});

 private:
  RunObserver& obs_;
  int64_t id_ = 0;
  bool ended_ = false;
};

// A stage's record before it begins: its layer (StageRecord::layer), where
// it runs, and its parameters (stored as JSON text).
StageRecord new_stage(std::string layer, std::string where, const boost::json::object& params);

// Runs one stage: begins `rec` (stamping its start), runs `body`, ends it complete. An Error ends
// it failed with its reason and a note "`what` failed: ..." (after `on_failure`, for cleanup), and
// the run goes on; cancellation propagates (the stage is then marked interrupted).
void run_series(StageContext& ctx, StageRecord rec, const std::string& what,
                const std::function<void(StageScope&)>& body,
                const std::function<void()>& on_failure = {});

// One typed request: `req` encoded and the answer decoded through their codecs
// (core/messages_json.h); an answer that does not decode is Error(kPeer).
template <class Result, class Request>
Result ask(remote::AgentPort& agent, const char* type, const Request& req, double timeout_s,
           const ProgressFn& progress = {}, const CancelToken* cancel = nullptr) {
  return msg::decode<Result>(agent.call(type, msg::to_json(req), timeout_s, progress, cancel),
                             type);
}

// The stages (stages/*.cc).
void disk_stage(StageContext& ctx, const std::string& where);  // kServer | kClient
void tcp_stage(StageContext& ctx, bool upload);                // upload: client -> server
void protocol_stage(StageContext& ctx, const SharePlan& share);
void size_scan_stage(StageContext& ctx, const SharePlan& share);
// The small-file stage (stages/files.cc): its passes on an end's own disk.
void files_disk_stage(StageContext& ctx, const std::string& where);  // kServer | kClient
void files_share_stage(StageContext& ctx, const SharePlan& share);
// What a small-file pass was asked for and where it ran, as each of its
// phases' samples stores it.
struct FilesPass {
  uint64_t count = 0, size = 0, dirs = 1;
  std::string order;  // "sequential" | "random"
  uint64_t seed = 0;
  std::string fs_type;        // of the directory the files were in ("" unknown)
  std::string share, driver;  // the share and its protocol; "" on an end's own disk
  std::string in_flight_note;
  bool cache_possible = false;  // the read phase: a cache may have served it
  std::string cache_reason;
};
using stored::EndCpu;  // {"server" | "client", its CPU}
// One phase of a pass stored, a sample (op "files-<phase>") with each end's
// CPU over it; a skipped or failed phase's sample carries why as its error.
void store_phase(StageContext& ctx, StageScope& stage, int& seq, const FilesPass& pass,
                 const msg::FilesPhase& phase, const std::vector<EndCpu>& cpu, double started_at,
                 const std::vector<const remote::AgentPort*>& links);

// A sample during which an agent was silent past [timeouts] stall, or that ran
// `over` s past its planned duration: flagged stalled (s.error and
// s.details) and left out of the figures. Returns whether it flagged it.
bool flag_stall(const Plan& plan, stored::Sample& s,
                const std::vector<const remote::AgentPort*>& links, double over, RunObserver& obs);
// Asks `agent` to prepare run directories; notes those of gone agents it
// swept on the way (`who`: kServer | kClient).
msg::PrepareResult prepare_dirs(remote::AgentPort& agent, const msg::PrepareRequest& req,
                                RunObserver& obs, const std::string& who);
// The share as the agent's transfer/size-scan (wire type "sweep") requests carry it (password
// included).
msg::ShareRef share_message(const SharePlan& share, const Agents& a);
// The connection the share's file server holds, for cpu_start: its URL's
// port (else its driver's default) from the client's address, so that the
// server agent knows that server whatever namespace or container it runs
// in; empty for a share without a URL (a mounted path) or an unknown client.
msg::CpuStartRequest server_connection(const SharePlan& share, const Agents& a);
// The server agent's run directory inside the share; its name, with a '/',
// prefixes remote paths.
std::string share_run_prefix(Agents& a, const SharePlan& share, RunObserver& obs);

}  // namespace cp::pipeline
