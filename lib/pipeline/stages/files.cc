// The small-file stage (docs/small-files.md): passes of [files] count files
// of [files] size, create, stat, read and delete each timed on its own. A
// function per place: files_disk_stage (an end's own disk, the agent's
// `files` request) and files_share_stage (a share, through the client
// agent's `files_share`, a request per phase); both store a sample per phase
// through store_phase.
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
#include "transfer/driver.h"

namespace cp::pipeline {
namespace {

namespace json = boost::json;
using remote::AgentPort;

// The passes a plan runs: "sequential", "random" or both, in that order.
std::vector<std::string> pass_orders(const Plan& plan) {
  if (plan.files_order == "both") return {"sequential", "random"};
  return {plan.files_order};
}

// Room in `dir` for one pass's files (they exist at once; a file takes at
// least a 4 KiB block); the directory's filesystem type.
std::string check_files_space(AgentPort& agent, const Plan& plan, const std::string& dir,
                              const char* fix) {
  return ask<msg::CheckSpaceResult>(
             agent, "check_space",
             msg::CheckSpaceRequest{
                 dir, plan.files_count * std::max<uint64_t>(plan.files_size, 4096), fix},
             30)
      .fs_type;
}

// A small-file stage's parameters: its own (`own`), then the pass's from
// the plan, as both stages store them.
json::object with_pass_params(json::object own, const Plan& plan) {
  own["count"] = plan.files_count;
  own["size"] = plan.files_size;
  own["dirs"] = plan.files_dirs;
  own["order"] = plan.files_order;
  own["budget"] = plan.files_budget;
  return own;
}

// A seed for a random pass's order, from the kernel's CSPRNG; stored with
// each sample, it reproduces the order.
uint64_t new_seed() { return std::stoull(random_hex(6), nullptr, 16); }

}  // namespace

// One sample for one phase of a pass: its op "files-<phase>", its bytes the
// data moved, its seconds the phase's, its details the ops (the figure:
// ops/s), latency and what the pass was asked for; `cpu` each end's over it.
void store_phase(StageContext& ctx, StageScope& stage, int& seq, const FilesPass& pass,
                 const msg::FilesPhase& ph, const std::vector<EndCpu>& cpu, double started_at,
                 const std::vector<const remote::AgentPort*>& links) {
  const files::PhaseStats& st = ph.stats;
  stored::Sample s;
  s.seq = ++seq;
  s.op = "files-" + std::string(files::phase_name(st.phase));
  s.size = pass.size;
  s.bytes = st.bytes;
  s.seconds = st.seconds;
  s.started_at = started_at;
  s.cache_possible = st.phase == files::Phase::read && pass.cache_possible;
  msg::FilesDetails d;
  d.count = pass.count;
  d.ops = st.ops;
  d.dirs = pass.dirs;
  d.order = pass.order;
  d.seed = pass.order == "random" ? pass.seed : 0;
  d.in_flight_mean = st.in_flight_mean;
  d.in_flight_max = st.in_flight_max;
  d.latency_us = st.latency;
  d.budget_hit = st.budget_hit;
  d.skipped_reason = st.skipped;
  d.fs_type = pass.fs_type;
  d.cache_reason = s.cache_possible ? pass.cache_reason : "";
  d.share = pass.share;
  d.driver = pass.driver;
  d.in_flight_note = pass.in_flight_note;
  d.sync_seconds = st.sync_seconds;
  d.round_trips = st.round_trips;
  d.serial_round_trips = st.serial_round_trips;
  if (!st.skipped.empty()) {
    s.error = "skipped: " + st.skipped;
  } else if (!st.error.empty()) {
    s.error = st.error;
  }
  s.details.kind = d;
  s.cpu = cpu;
  flag_stall(ctx.plan, s, links, 0, ctx.obs);
  ctx.obs.on_sample(stage.id(), s);
}

void files_disk_stage(StageContext& ctx, const std::string& where) {
  const Plan& plan = ctx.plan;
  AgentPort& agent = ctx.agent_on(where);
  const std::string& dir = ctx.disk_dir_on(where);
  StageRecord rec = new_stage("files", where, with_pass_params({{"dir", dir}}, plan));
  run_series(ctx, rec, fmt::format("small-file stage on {}'s disk", where), [&](StageScope& stage) {
    check_files_space(agent, plan, dir, "free some space, or lower [files] count or size");
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
      double started_at = wall_seconds();
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
      FilesPass info{req.count, req.size, req.dirs, req.order, req.seed, r.fs_type};
      info.cache_possible = r.cache_possible;
      info.cache_reason = r.cache_reason;
      for (const msg::FilesPhase& ph : r.phases) {
        store_phase(ctx, stage, seq, info, ph, {{where, ph.cpu}}, started_at, {&agent});
        started_at += ph.stats.seconds;
      }
      // A sample each, as the plan's outline counts them.
      for (const auto& ph : r.phases) {
        ctx.obs.on_progress({label, pass, int(orders.size()), ph.stats.bytes, ph.stats.seconds,
                             true, int64_t(ph.stats.ops)});
      }
    }
  });
}

namespace {

// Operations in flight a share's pass asks for: the plan's, else (auto) one,
// as `cp -r` or a file manager's copy keeps: a file at a time.
uint64_t share_in_flight(const Plan& plan) {
  return plan.files_in_flight > 0 ? uint64_t(plan.files_in_flight) : 1;
}

// One share's small-file passes: what is fixed before the first.
struct SharePasses {
  StageContext& ctx;
  const SharePlan& share;
  bool has_server = false;  // the server agent reaches the share's directory
  std::string prefix;       // the server's run directory inside the share, with '/'
  std::string fs_type;      // of the share's directory on the server ("" unknown)
  msg::ShareRef ref;
  msg::CpuStartRequest conn;  // the connection the file server holds
};

// The server's tree of one pass (`name` in its run directory of the share):
// dropped from its page cache before the read, or removed after a failure.
msg::FilesTreeResult server_tree(SharePasses& sp, const std::string& name, const char* action) {
  const Plan& plan = sp.ctx.plan;
  return ask<msg::FilesTreeResult>(
      sp.ctx.agents.server, "files_tree",
      msg::FilesTreeRequest{sp.share.server_dir, name, action, plan.files_count, plan.files_size,
                            plan.files_dirs},
      kCallTimeout, {}, &sp.ctx.cancel);
}

// The read phase's source: on a disk share the server drops the tree from its
// page cache first (a cache of the filesystem's own may still serve it); a
// RAM share is read from RAM by design.
void before_read(SharePasses& sp, const std::string& name, FilesPass& info) {
  if (sp.share.medium != "disk") return;
  if (!sp.has_server) {
    info.cache_possible = true;
    info.cache_reason =
        "no server agent reaches the share's directory to drop the files from "
        "its page cache";
    return;
  }
  const msg::FilesTreeResult d = server_tree(sp, name, "drop");
  info.cache_possible = d.cache_possible;
  info.cache_reason = d.cache_reason;
}

// One pass, a request per phase, each bracketed by the server's CPU window.
// A create that fails ends the pass (the client removed what it made) and the
// stage; a later phase that fails is stored with its error, and the phases
// after it still run, so the delete removes the tree.
void share_pass(SharePasses& sp, StageScope& stage, int& seq, msg::FilesShareRequest req,
                FilesPass info, const std::string& name, const std::string& label, int pass,
                int passes) {
  Agents& a = sp.ctx.agents;
  std::string leftover;
  for (files::Phase phase : files::kPhases) {
    sp.ctx.cancel.check();
    req.phase = std::string(files::phase_name(phase));
    if (phase == files::Phase::read) before_read(sp, name, info);
    if (sp.has_server) a.server.call("cpu_start", msg::to_json(sp.conn), 30);
    double started_at = wall_seconds();
    msg::FilesShareResult r;
    try {
      r = ask<msg::FilesShareResult>(a.client, "files_share", req, kCallTimeout, {},
                                     &sp.ctx.cancel);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      stored::Sample s;
      s.seq = ++seq;
      s.op = "files-" + req.phase;
      s.size = req.size;
      s.started_at = started_at;
      s.error = e.what();
      sp.ctx.obs.on_sample(stage.id(), s);
      try {
        if (sp.has_server) {
          a.server.call("cpu_stop", {}, 30);
          server_tree(sp, name, "remove");
        }
      } catch (const Error& cleanup) {
        if (cleanup.kind() == ErrorKind::kCancelled) throw;
      }
      throw;
    }
    std::vector<EndCpu> cpu;
    if (sp.has_server) {
      cpu.push_back({kServer, msg::cpu_summary_from_json(a.server.call("cpu_stop", {}, 30))});
    }
    info.in_flight_note = r.in_flight_note;
    for (const msg::FilesPhase& ph : r.phases) {
      std::vector<EndCpu> ends = cpu;
      ends.push_back({kClient, ph.cpu});
      store_phase(sp.ctx, stage, seq, info, ph, ends, started_at, {&a.client});
      started_at += ph.stats.seconds;
      sp.ctx.obs.on_progress(
          {label, pass, passes, ph.stats.bytes, ph.stats.seconds, true, int64_t(ph.stats.ops)});
    }
    if (!r.leftover.empty()) leftover = r.leftover;
    if (phase == files::Phase::create) {
      req.existing = r.created;
      if (!r.kept) {
        const std::string why = r.phases.empty() ? "" : r.phases[0].stats.error;
        throw Error(ErrorKind::kIo,
                    fmt::format("{}: the small-file create failed: {}", sp.share.name, why),
                    "check the share's space and permissions for the user it logs in as");
      }
    }
  }
  if (!leftover.empty()) {
    // What the share's delete could not remove, the server agent removes.
    sp.ctx.obs.on_note(fmt::format("{}: {}", sp.share.name, leftover));
    if (sp.has_server) server_tree(sp, name, "remove");
  }
}

}  // namespace

// The small-file passes over one share: the same tree as on each end's disk,
// created, stat-ed, read and deleted through the share's driver by the
// client agent, a request per phase; the server's CPU over each phase beside
// the client's, and on a disk share the server's page cache dropped before
// the read.
void files_share_stage(StageContext& ctx, const SharePlan& share) {
  const Plan& plan = ctx.plan;
  if (!files_pass_can_run(share)) {
    ctx.obs.on_note(fmt::format(
        "{}: no small-file passes: the {} driver cannot make a directory (`chokepoint drivers`)",
        share.name, share.driver));
    return;
  }
  json::object params = with_pass_params({{"share", share.name},
                                          {"driver", share.driver},
                                          {"url", share.url},
                                          {"server_dir", share.server_dir},
                                          {"medium", share.medium}},
                                         plan);
  params["in_flight"] = share_in_flight(plan);
  StageRecord rec = new_stage("files", share.medium, params);
  SharePasses sp{ctx, share};
  run_series(
      ctx, rec, fmt::format("small-file stage over {}", share.name),
      [&](StageScope& stage) {
        Agents& a = ctx.agents;
        sp.has_server = !share.server_dir.empty();
        if (sp.has_server) {
          sp.prefix = share_run_prefix(a, share, ctx.obs);
          sp.fs_type =
              check_files_space(a.server, plan, share.server_dir,
                                "free some space on the share, or lower [files] count or size");
        }
        sp.ref = share_message(share, a);
        sp.conn = server_connection(share, a);
        int seq = 0, pass = 0;
        const std::vector<std::string> orders = pass_orders(plan);
        for (const std::string& order : orders) {
          ++pass;
          // A random part: another user of a shared server cannot plant a
          // link at the name before the create makes it.
          const std::string name = fmt::format("files-{}-{}-{}", share.name, pass, random_hex(4));
          const uint64_t seed = order == "random" ? new_seed() : 0;
          const msg::FilesShareRequest req{sp.ref,
                                           sp.prefix + name,
                                           plan.files_count,
                                           plan.files_size,
                                           plan.files_dirs,
                                           order,
                                           seed,
                                           plan.files_budget,
                                           share_in_flight(plan)};
          FilesPass info{plan.files_count, plan.files_size, plan.files_dirs, order, seed,
                         sp.fs_type};
          info.share = share.name;
          info.driver = share.driver;
          const std::string label = fmt::format("files {} {} {} x {}", share.name, order,
                                                plan.files_count, format_size(plan.files_size));
          share_pass(sp, stage, seq, req, info, name, label, pass, int(orders.size()));
        }
        a.client.call("close_shares", {}, 30);
      },
      [&] {
        // Log out of the share whatever happened: an open session holds the server.
        try {
          ctx.agents.client.call("close_shares", {}, 30);
        } catch (const Error&) {
        }
      });
}

}  // namespace cp::pipeline
