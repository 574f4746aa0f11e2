// Stages 3 and 4: one share through its protocol (pipeline/stage.h). What the
// stage needs of a protocol (does it have server files, a path_rate option, a
// negotiated-status request) comes from its driver's spec, never its name.
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/random.h"
#include "core/stats.h"
#include "core/units.h"
#include "link/agent_port.h"
#include "transfer/driver.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentPort;

namespace {

// The path's rate from the TCP stage, bytes/s: the median of the faster
// direction's samples; 0 when it has none.
double path_rate(const Agents& a) {
  double best = 0;
  for (const auto& [where, rates] : a.tcp_rates) {
    if (!rates.empty()) best = std::max(best, summarize(rates).median);
  }
  return best;
}

// What the server says this client negotiated, through the driver's
// negotiated-status request (smb: smbstatus); {"<driver>_negotiated":
// "unknown: why"} when the server cannot say.
std::map<std::string, std::string> ask_negotiated(const transfer::DriverSpec& spec,
                                                  const Plan& plan, Agents& a, RunObserver& obs) {
  const transfer::NegotiatedQuery& q = spec.negotiated;
  try {
    const json::value body = json::parse(q.body(plan.server.samba_conf));
    CP_CHECK(body.is_object());
    const json::object reply = a.server.call(std::string(q.request), body.as_object(), 60);
    return q.read(json::serialize(reply), a.client_address);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    obs.on_note(fmt::format("cannot tell what {} negotiated: {}", spec.display, e.what()));
    return {{fmt::format("{}_negotiated", spec.name), std::string("unknown: ") + e.what()}};
  }
}

// One share's run: what is fixed before its first sample, and what its
// samples learn on the way.
struct ShareRun {
  StageContext& ctx;
  const SharePlan& share;
  const transfer::DriverSpec* spec;  // null: a driver this build lacks (the agent refuses it)
  std::vector<uint64_t> sizes;       // under the plan's budget
  msg::ShareRef ref;                 // as transfer requests carry it
  bool has_server;                   // the server agent lays out the share's files
  std::string prefix;                // the server's run directory inside the share, with '/'
  // The share directory's filesystem on the server and the disk under it ("" unknown).
  std::string server_fs, server_disk;
  std::map<std::string, std::string> negotiated;  // what the server says it agreed with this client
  msg::CpuStartRequest cpu_start;                 // the connection the file server holds
};

// The sizes the share runs under the plan's budget (noting those left out),
// and the share as the agent gets it. A driver whose table declares a
// path_rate option (smb, nfs) gets the path's rate from the TCP stage (the
// faster direction's median), so that smb's connections=auto covers a call's
// round trip and nfs's depth=auto the path's bytes; an option the share sets
// itself wins.
ShareRun plan_share(StageContext& ctx, const SharePlan& share) {
  const double tcp_rate = path_rate(ctx.agents);
  ShareRun run{ctx, share, transfer::find_driver_spec(share.driver)};
  std::vector<uint64_t> dropped;
  run.sizes = budgeted_proto_sizes(ctx.plan, tcp_rate, &dropped);
  if (!dropped.empty()) {
    std::string list;
    for (uint64_t d : dropped) list += (list.empty() ? "" : ", ") + format_size(d);
    ctx.obs.on_note(fmt::format(
        "{}: {} files left out: {} of them would not fit in the {:.0f} s budget at TCP's {} "
        "([protocol] sizes or budget keeps them)",
        share.name, list, kMinProtoSamples, ctx.plan.proto_budget, format_mbps(tcp_rate)));
  }
  run.ref = share_message(share, ctx.agents);
  if (run.spec && transfer::find_option(*run.spec, "path_rate") && tcp_rate > 0 &&
      !share.options.count("path_rate")) {
    run.ref.options["path_rate"] = fmt::format("{:.0f}bit", tcp_rate * 8);
  }
  run.has_server = !share.server_dir.empty();
  run.cpu_start = server_connection(share, ctx.agents);
  return run;
}

StageRecord stage_record(const ShareRun& run) {
  const Plan& plan = run.ctx.plan;
  return new_stage(run.share.driver, run.share.medium,
                   {{"share", run.share.name},
                    {"url", run.share.url},
                    {"server_dir", run.share.server_dir},
                    {"medium", run.share.medium},
                    {"sizes", json::array(run.sizes.begin(), run.sizes.end())},
                    {"count", plan.proto_count},
                    {"budget", plan.proto_budget},
                    {"block", plan.proto_block}});
}

// The server's run directory inside the share, and room there for the
// biggest file.
void prepare_server(ShareRun& run) {
  if (!run.has_server) return;
  Agents& a = run.ctx.agents;
  run.prefix = share_run_prefix(a, run.share, run.ctx.obs);
  uint64_t biggest = 0;
  for (auto s : run.sizes) biggest = std::max(biggest, s);
  const auto space = ask<msg::CheckSpaceResult>(
      a.server, "check_space",
      msg::CheckSpaceRequest{run.share.server_dir, biggest,
                             "free some space on the share, or use smaller files "
                             "([protocol] sizes)"},
      30);
  run.server_fs = space.fs_type;
  run.server_disk = space.disk;
}

// The source file of one sample, made on the side it is read from: the
// server's share for a read (evicted from its page cache on disk shares),
// the client's RAM dir for a write. Returns its checksum ("" for a read from
// a share without server files).
std::string make_source(ShareRun& run, stored::Sample& s, const std::string& file, bool read,
                        std::string& cache_reason) {
  Agents& a = run.ctx.agents;
  const CancelToken& cancel = run.ctx.cancel;
  if (!read) {
    const msg::FileRequest make{run.ctx.plan.client.ram_dir, file, s.size};
    return ask<msg::FileResult>(a.client, "make_file", make, kCallTimeout, {}, &cancel).checksum;
  }
  if (!run.has_server) return {};
  const msg::FileRequest make{run.share.server_dir,
                              file,
                              s.size,
                              1u << 20,
                              /*evict=*/run.share.medium == "disk",
                              /*shared=*/true};
  const msg::FileResult made =
      ask<msg::FileResult>(a.server, "make_file", make, kCallTimeout, {}, &cancel);
  // Evicted, yet the server's filesystem (ZFS's ARC) may still serve it.
  s.cache_possible = made.cache_possible;
  if (made.cache_possible) cache_reason = made.cache_reason;
  return made.checksum;
}

// The transfer itself, through the client agent. A failure records the
// sample with its error, removes what it made on both ends and rethrows.
msg::TransferResult transfer(ShareRun& run, StageScope& stage, stored::Sample& s,
                             const std::string& file, const std::string& label, int i) {
  Agents& a = run.ctx.agents;
  const Plan& plan = run.ctx.plan;
  const std::string& client_dir = plan.client.ram_dir;
  const msg::TransferRequest request{run.ref, s.op,   run.prefix + file, client_dir,
                                     file,    s.size, plan.proto_block,  /*delete_after=*/true};
  try {
    return ask<msg::TransferResult>(
        a.client, "transfer", request, kCallTimeout,
        [&](uint64_t b, double t) {
          run.ctx.obs.on_progress({label, i, plan.proto_count, b, t, false});
        },
        &run.ctx.cancel);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    s.error = e.what();
    run.ctx.obs.on_sample(stage.id(), s);
    // Both ends remove what this sample made, whatever reached them.
    try {
      if (run.has_server) {
        a.server.call("cpu_stop", {}, 30);
        a.server.call("remove_file", msg::to_json(msg::FileRequest{run.share.server_dir, file}),
                      30);
      }
      a.client.call("remove_file", msg::to_json(msg::FileRequest{client_dir, file}), 30);
    } catch (const Error& cleanup) {
      if (cleanup.kind() == ErrorKind::kCancelled) throw;
    }
    throw;
  }
}

// What arrived, checked against what was sent: the server's copy of a
// written file (size and checksum), else the client's. Removes the server's
// file; stores the server's CPU beside the client's in s.cpu.
void check_arrival(ShareRun& run, stored::Sample& s, const std::string& file,
                   const msg::TransferResult& r, std::string& expect) {
  Agents& a = run.ctx.agents;
  std::string arrived = r.checksum;
  if (run.has_server) {
    s.cpu->push_back({kServer, msg::cpu_summary_from_json(a.server.call("cpu_stop", {}, 30))});
    if (s.op == "write") {
      const auto info =
          ask<msg::FileResult>(a.server, "file_info", msg::FileRequest{run.share.server_dir, file},
                               kCallTimeout, {}, &run.ctx.cancel);
      arrived = info.checksum;
      if (info.bytes != s.size) {
        s.error = fmt::format("the server holds {} bytes of {}, not {}", info.bytes, file, s.size);
      }
    }
    a.server.call("remove_file", msg::to_json(msg::FileRequest{run.share.server_dir, file}), 30);
  } else {
    arrived = expect = r.checksum;
  }
  s.bytes = r.bytes;
  s.seconds = r.seconds;
  if (s.error.empty() && s.bytes != s.size) {
    s.error = fmt::format("moved {} bytes of {}, not {}", s.bytes, file, s.size);
  }
  if (s.error.empty() && arrived != expect) {
    s.error = fmt::format("checksum mismatch on {}: sent {}, arrived {}", file, expect, arrived);
  }
}

// The sample's details: the session's properties, with what the server says
// was negotiated where the driver declares a request for it.
msg::TransferDetails details_of(ShareRun& run, const std::string& file, const std::string& expect,
                                const msg::TransferResult& r, const std::string& cache_reason) {
  msg::TransferDetails details{file, run.share.name, expect, r.properties};
  if (run.spec && !run.spec->negotiated.request.empty() && run.has_server) {
    if (run.negotiated.empty()) {
      run.negotiated = ask_negotiated(*run.spec, run.ctx.plan, run.ctx.agents, run.ctx.obs);
    }
    for (const auto& [k, v] : run.negotiated) details.properties[k] = v;
    if (!run.negotiated.count(fmt::format("{}_negotiated", run.spec->name))) {
      details.properties.erase("negotiated");  // now known
    }
  }
  details.server_fs = run.server_fs;
  details.cache_reason = cache_reason;
  details.server_disk = run.server_disk;
  return details;
}

// One sample: a fresh file made, moved through the share, checked on
// arrival and removed on both ends.
void one_sample(ShareRun& run, StageScope& stage, stored::Sample& s, const std::string& label,
                int i) {
  Agents& a = run.ctx.agents;
  // Named after the share too: a file a failed stage could not remove never
  // collides with the next share's. A random part: another user of a shared
  // server cannot plant a link or file at the name before it is made.
  const std::string file =
      fmt::format("{}-{}-{}-{}-{}.dat", run.share.name, s.op, s.size, i, random_hex(8));
  s.started_at = wall_seconds();
  std::string cache_reason;
  std::string expect = make_source(run, s, file, s.op == "read", cache_reason);
  if (run.has_server) a.server.call("cpu_start", msg::to_json(run.cpu_start), 30);
  const msg::TransferResult r = transfer(run, stage, s, file, label, i);
  s.cpu = std::vector<stored::EndCpu>{{kClient, r.cpu}};
  check_arrival(run, s, file, r, expect);
  s.details.kind = details_of(run, file, expect, r, cache_reason);
  const bool stalled = flag_stall(run.ctx.plan, s, {&a.client}, 0,
                                  run.ctx.obs);  // the transfer was its last call
  run.ctx.obs.on_sample(stage.id(), s);
  run.ctx.obs.on_progress({label, i, run.ctx.plan.proto_count, s.bytes, s.seconds, true});
  if (!s.error.empty() && !stalled) throw Error(ErrorKind::kIo, s.error);
}

// Every size's reads, then its writes, `count` each (fewer when the budget
// ends a series).
void run_share(ShareRun& run, StageScope& stage) {
  const Plan& plan = run.ctx.plan;
  prepare_server(run);
  int seq = 0;
  for (uint64_t size : run.sizes) {
    for (const char* op : {"read", "write"}) {
      const std::string label =
          fmt::format("{} {} {} {}", run.share.driver, run.share.medium, op, format_size(size));
      const double series_start = monotonic_seconds();
      for (int i = 1; i <= plan.proto_count; ++i) {
        run.ctx.cancel.check();
        if (proto_series_done(plan, i - 1, monotonic_seconds() - series_start)) {
          run.ctx.obs.on_note(fmt::format("{}: {} of {} samples in the {:.0f} s budget", label,
                                          i - 1, plan.proto_count, plan.proto_budget));
          break;
        }
        stored::Sample s;
        s.seq = ++seq;
        s.op = op;
        s.size = size;
        one_sample(run, stage, s, label, i);
      }
    }
  }
  run.ctx.agents.client.call("close_shares", {}, 30);
}

}  // namespace

// One share through its protocol: for each size, `count` reads (a fresh
// server file each, evicted from the server's page cache on disk shares,
// read into the client's RAM dir) then `count` writes (a fresh client file
// written to the share). Both ends check size and checksum; both remove
// what they made. (A driver this build lacks fails the stage at the agent.)
void protocol_stage(StageContext& ctx, const SharePlan& share) {
  ShareRun run = plan_share(ctx, share);
  run_series(
      ctx, stage_record(run), fmt::format("{} stage ({})", share.driver, share.name),
      [&](StageScope& stage) { run_share(run, stage); },
      [&] {
        // Log out of the share whatever happened: an open session holds the server.
        try {
          ctx.agents.client.call("close_shares", {}, 30);
        } catch (const Error&) {
        }
      });
}

}  // namespace cp::pipeline
