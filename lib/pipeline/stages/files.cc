// The small-file stage (docs/small-files.md): passes of [files] count files
// of [files] size, create, stat, read and delete each timed on its own, on
// each end's disk_dir. A function per place: files_disk_stage (an end's own
// disk, the agent's `files` request); a share's passes plug in beside it with
// their own request and store their phases through store_phases.
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/random.h"
#include "core/units.h"
#include "link/agent_port.h"

namespace cp::pipeline {
namespace {

namespace json = boost::json;
using remote::AgentPort;

// The passes a plan runs: "sequential", "random" or both, in that order.
std::vector<std::string> pass_orders(const Plan& plan) {
  if (plan.files_order == "both") return {"sequential", "random"};
  return {plan.files_order};
}

// A seed for a random pass's order, from the kernel's CSPRNG; stored with
// each sample, it reproduces the order.
uint64_t new_seed() { return std::stoull(random_hex(6), nullptr, 16); }

}  // namespace

// One sample per phase of a pass: its op "files-<phase>", its bytes the data
// moved, its seconds the phase's, its details the ops (the figure: ops/s),
// latency and what the pass was asked for. `where`: the role whose CPU the
// phases carry ("server", "client").
void store_phases(StageContext& ctx, StageScope& stage, int& seq, const std::string& where,
                  const msg::FilesRequest& req, const msg::FilesResult& r, double started_at,
                  const std::vector<const remote::AgentPort*>& links, const std::string& share) {
  for (const msg::FilesPhase& ph : r.phases) {
    const files::PhaseStats& st = ph.stats;
    stored::Sample s;
    s.seq = ++seq;
    s.op = "files-" + std::string(files::phase_name(st.phase));
    s.size = req.size;
    s.bytes = st.bytes;
    s.seconds = st.seconds;
    s.started_at = started_at;
    s.cache_possible = st.phase == files::Phase::read && r.cache_possible;
    msg::FilesDetails d;
    d.count = req.count;
    d.ops = st.ops;
    d.dirs = req.dirs;
    d.order = req.order;
    d.seed = req.order == "random" ? req.seed : 0;
    d.in_flight_mean = st.in_flight_mean;
    d.in_flight_max = st.in_flight_max;
    d.latency_us = st.latency;
    d.budget_hit = st.budget_hit;
    d.skipped_reason = st.skipped;
    d.fs_type = r.fs_type;
    d.cache_reason = s.cache_possible ? r.cache_reason : "";
    d.share = share;
    if (!st.skipped.empty()) s.error = "skipped: " + st.skipped;
    s.details.kind = d;
    s.cpu = std::vector<stored::EndCpu>{{where, ph.cpu}};
    flag_stall(ctx.plan, s, links, 0, ctx.obs);
    ctx.obs.on_sample(stage.id(), s);
    started_at += st.seconds;
  }
}

void files_disk_stage(StageContext& ctx, const std::string& where) {
  const Plan& plan = ctx.plan;
  AgentPort& agent = where == kServer ? ctx.agents.server : ctx.agents.client;
  const std::string& dir = where == kServer ? plan.server.disk_dir : plan.client.disk_dir;
  StageRecord rec;
  rec.layer = "files";
  rec.where = where;
  rec.params_json = json::serialize(json::object{{"dir", dir},
                                                 {"count", plan.files_count},
                                                 {"size", plan.files_size},
                                                 {"dirs", plan.files_dirs},
                                                 {"order", plan.files_order},
                                                 {"budget", plan.files_budget}});
  run_series(ctx, rec, fmt::format("small-file stage on {}'s disk", where), [&](StageScope& stage) {
    // One pass's files exist at once; a file takes at least a 4 KiB block.
    ask<msg::CheckSpaceResult>(
        agent, "check_space",
        msg::CheckSpaceRequest{dir, plan.files_count * std::max<uint64_t>(plan.files_size, 4096),
                               "free some space, or lower [files] count or size"},
        30);
    int seq = 0;
    int pass = 0;
    const std::vector<std::string> orders = pass_orders(plan);
    for (const std::string& order : orders) {
      ctx.cancel.check();
      ++pass;
      const msg::FilesRequest req{dir,
                                  fmt::format("files-{}-{}", where, pass),
                                  plan.files_count,
                                  plan.files_size,
                                  plan.files_dirs,
                                  order,
                                  order == "random" ? new_seed() : 0,
                                  plan.files_budget};
      const std::string label = fmt::format("files {} {} {} x {}", where, order, plan.files_count,
                                            format_size(plan.files_size));
      auto progress = [&](uint64_t b, double t) {
        ctx.obs.on_progress({label, pass, int(orders.size()), b, t, false});
      };
      const double started_at = wall_seconds();
      msg::FilesResult r;
      try {
        r = ask<msg::FilesResult>(agent, "files", req, kCallTimeout, progress, &ctx.cancel);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kCancelled) throw;
        stored::Sample s;
        s.seq = ++seq;
        s.op = "files-create";
        s.size = plan.files_size;
        s.started_at = started_at;
        s.error = e.what();
        ctx.obs.on_sample(stage.id(), s);
        throw;
      }
      store_phases(ctx, stage, seq, where, req, r, started_at, {&agent}, "");
      // A sample each, as the plan's outline counts them.
      for (const auto& ph : r.phases) {
        ctx.obs.on_progress(
            {label, pass, int(orders.size()), ph.stats.bytes, ph.stats.seconds, true});
      }
    }
  });
}

}  // namespace cp::pipeline
