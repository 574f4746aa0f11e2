// Stages 3 and 4: one share through its protocol (pipeline/stage.h).
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

// The SMB session the client holds, as smbd reports it: dialect, signing,
// encryption (libsmbclient does not tell its caller). {"smb_negotiated":
// "unknown: why"} when the server cannot say.
std::map<std::string, std::string> smb_negotiated(const Plan& plan, Agents& a, RunObserver& obs) {
  try {
    const auto st = ask<msg::SmbStatusResult>(a.server, "smb_status",
                                              msg::SmbStatusRequest{plan.server.samba_conf}, 60);
    for (const auto& sess : st.sessions) {
      // "ipv4:198.18.0.2:41234": this client's address between the colons.
      if (!a.client_address.empty() &&
          sess.client.find(":" + a.client_address + ":") == std::string::npos) {
        continue;
      }
      std::map<std::string, std::string> out;
      for (const auto& [k, val] :
           {std::pair{"dialect", sess.dialect}, std::pair{"signing", sess.signing},
            std::pair{"encryption", sess.encryption}}) {
        out[std::string("smb_") + k] = (val.empty() || val == "-") ? "none" : val;
      }
      return out;
    }
    return {{"smb_negotiated", "unknown: smbstatus lists no session from this client"}};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    obs.on_note(fmt::format("cannot tell what SMB negotiated: {}", e.what()));
    return {{"smb_negotiated", std::string("unknown: ") + e.what()}};
  }
}

}  // namespace

// One share through its protocol: for each size, `count` reads (a fresh
// server file each, evicted from the server's page cache on disk shares,
// read into the client's RAM dir) then `count` writes (a fresh client file
// written to the share). Both ends check size and checksum; both remove
// what they made.
void protocol_stage(StageContext& ctx, const SharePlan& share) {
  const Plan& plan = ctx.plan;
  RunObserver& obs = ctx.obs;
  const CancelToken& cancel = ctx.cancel;
  Agents& a = ctx.agents;
  // The path's rate from the TCP stage (the faster direction's median), bytes/s.
  const double tcp_rate = path_rate(a);
  StageRecord rec;
  rec.layer = share.driver;
  rec.where = share.medium;
  // The sizes this share runs and its series' length, under the plan's budget.
  std::vector<uint64_t> dropped;
  const std::vector<uint64_t> run_sizes = budgeted_proto_sizes(plan, tcp_rate, &dropped);
  if (!dropped.empty()) {
    std::string list;
    for (uint64_t d : dropped) list += (list.empty() ? "" : ", ") + format_size(d);
    obs.on_note(fmt::format(
        "{}: {} files left out: {} of them would not fit in the {:.0f} s budget at TCP's {} "
        "([protocol] sizes or budget keeps them)",
        share.name, list, kMinProtoSamples, plan.proto_budget, format_mbps(tcp_rate)));
  }
  json::array sizes;
  for (auto s : run_sizes) sizes.push_back(s);
  rec.params_json = json::serialize(json::object{{"share", share.name},
                                                 {"url", share.url},
                                                 {"server_dir", share.server_dir},
                                                 {"medium", share.medium},
                                                 {"sizes", sizes},
                                                 {"count", plan.proto_count},
                                                 {"budget", plan.proto_budget},
                                                 {"block", plan.proto_block}});
  const bool evict = share.medium == "disk";
  const std::string& client_dir = plan.client.ram_dir;
  msg::ShareRef share_ref = share_message(share, a);
  // A driver whose table declares a path_rate option (smb, nfs) gets the
  // path's rate from the TCP stage (the faster direction's median), so that
  // smb's connections=auto covers a call's round trip and nfs's depth=auto
  // the path's bytes (transfer/smb.cc, nfs.cc); an option the share sets
  // itself wins.
  // (A driver this build lacks fails the stage below, at the agent.)
  const auto specs = transfer::driver_specs();
  const auto spec = std::find_if(specs.begin(), specs.end(), [&](const transfer::DriverSpec* d) {
    return d->name == share.driver;
  });
  if (spec != specs.end() && transfer::find_option(**spec, "path_rate") && tcp_rate > 0 &&
      !share.options.count("path_rate")) {
    share_ref.options["path_rate"] = fmt::format("{:.0f}bit", tcp_rate * 8);
  }
  const bool has_server = !share.server_dir.empty();
  std::map<std::string, std::string> negotiated;  // SMB: what smbd says it agreed with this client
  // The share directory's filesystem on the server and the disk under it ("" unknown).
  std::string server_fs, server_disk;
  run_series(
      ctx, rec, fmt::format("{} stage ({})", share.driver, share.name),
      [&](StageScope& stage) {
        // The server's run directory inside the share; its name is the remote prefix.
        std::string prefix;
        if (!share.server_dir.empty()) {
          prefix = share_run_prefix(a, share, obs);
          uint64_t biggest = 0;
          for (auto s : run_sizes) biggest = std::max(biggest, s);
          const auto space = ask<msg::CheckSpaceResult>(
              a.server, "check_space",
              msg::CheckSpaceRequest{share.server_dir, biggest,
                                     "free some space on the share, or use smaller files "
                                     "([protocol] sizes)"},
              30);
          server_fs = space.fs_type;
          server_disk = space.disk;
        }
        int seq = 0;
        for (uint64_t size : run_sizes) {
          for (const char* op : {"read", "write"}) {
            const bool read = std::string(op) == "read";
            const std::string label =
                fmt::format("{} {} {} {}", share.driver, share.medium, op, format_size(size));
            const double series_start = monotonic_seconds();
            for (int i = 1; i <= plan.proto_count; ++i) {
              cancel.check();
              if (proto_series_done(plan, i - 1, monotonic_seconds() - series_start)) {
                obs.on_note(fmt::format("{}: {} of {} samples in the {:.0f} s budget", label, i - 1,
                                        plan.proto_count, plan.proto_budget));
                break;
              }
              // Named after the share too: a file a failed stage could not remove
              // never collides with the next share's.
              // A random part: another user of a shared server cannot plant
              // a link or file at the name before it is made.
              const std::string file =
                  fmt::format("{}-{}-{}-{}-{}.dat", share.name, op, size, i, random_hex(8));
              SampleRecord s;
              s.seq = ++seq;
              s.op = op;
              s.size = size;
              s.started_at = wall_seconds();
              std::string expect, cache_reason;
              if (read) {
                if (!share.server_dir.empty()) {
                  const msg::FileRequest make{share.server_dir, file, size, 1u << 20, evict,
                                              /*shared=*/true};
                  const msg::FileResult made =
                      ask<msg::FileResult>(a.server, "make_file", make, kCallTimeout, {}, &cancel);
                  expect = made.checksum;
                  // Evicted, yet the server's filesystem (ZFS's ARC) may still serve it.
                  s.cache_possible = made.cache_possible;
                  if (made.cache_possible) cache_reason = made.cache_reason;
                }
              } else {
                const msg::FileRequest make{client_dir, file, size};
                expect =
                    ask<msg::FileResult>(a.client, "make_file", make, kCallTimeout, {}, &cancel)
                        .checksum;
              }
              if (!share.server_dir.empty()) a.server.call("cpu_start", {}, 30);
              const msg::TransferRequest transfer{share_ref,
                                                  op,
                                                  prefix + file,
                                                  client_dir,
                                                  file,
                                                  size,
                                                  plan.proto_block,
                                                  /*delete_after=*/true};
              msg::TransferResult r;
              try {
                r = ask<msg::TransferResult>(
                    a.client, "transfer", transfer, kCallTimeout,
                    [&](uint64_t b, double t) {
                      obs.on_progress({label, i, plan.proto_count, b, t, false});
                    },
                    &cancel);
              } catch (const Error& e) {
                if (e.kind() == ErrorKind::kCancelled) throw;
                s.error = e.what();
                obs.on_sample(stage.id(), s);
                // Both ends remove what this sample made, whatever reached them.
                try {
                  if (has_server) {
                    a.server.call("cpu_stop", {}, 30);
                    a.server.call("remove_file",
                                  msg::to_json(msg::FileRequest{share.server_dir, file}), 30);
                  }
                  a.client.call("remove_file", msg::to_json(msg::FileRequest{client_dir, file}),
                                30);
                } catch (const Error& cleanup) {
                  if (cleanup.kind() == ErrorKind::kCancelled) throw;
                }
                throw;
              }
              std::vector<std::pair<std::string, msg::CpuSummary>> cpu{{kClient, r.cpu}};
              std::string arrived = r.checksum;
              if (!share.server_dir.empty()) {
                cpu.emplace_back(kServer,
                                 msg::cpu_summary_from_json(a.server.call("cpu_stop", {}, 30)));
                if (!read) {
                  const auto info = ask<msg::FileResult>(a.server, "file_info",
                                                         msg::FileRequest{share.server_dir, file},
                                                         kCallTimeout, {}, &cancel);
                  arrived = info.checksum;
                  if (info.bytes != size) {
                    s.error = fmt::format("the server holds {} bytes of {}, not {}", info.bytes,
                                          file, size);
                  }
                }
                a.server.call("remove_file", msg::to_json(msg::FileRequest{share.server_dir, file}),
                              30);
              } else {
                arrived = expect = r.checksum;
              }
              s.bytes = r.bytes;
              s.seconds = r.seconds;
              if (s.error.empty() && s.bytes != size) {
                s.error = fmt::format("moved {} bytes of {}, not {}", s.bytes, file, size);
              }
              if (s.error.empty() && arrived != expect) {
                s.error = fmt::format("checksum mismatch on {}: sent {}, arrived {}", file, expect,
                                      arrived);
              }
              msg::TransferDetails details{file, share.name, expect, r.properties};
              if (share.driver == "smb" && has_server) {
                if (negotiated.empty()) negotiated = smb_negotiated(plan, a, obs);
                for (const auto& [k, v] : negotiated) details.properties[k] = v;
                if (negotiated.count("smb_dialect"))
                  details.properties.erase("negotiated");  // now known
              }
              details.server_fs = server_fs;
              details.cache_reason = cache_reason;
              details.server_disk = server_disk;
              s.details_json = json::serialize(msg::to_json(details));
              s.cpu_json = sample_cpu_json(cpu);
              const bool stalled =
                  flag_stall(plan, s, {&a.client}, 0, obs);  // the transfer was its last call
              obs.on_sample(stage.id(), s);
              obs.on_progress({label, i, plan.proto_count, s.bytes, s.seconds, true});
              if (!s.error.empty() && !stalled) throw Error(ErrorKind::kIo, s.error);
            }
          }
        }
        a.client.call("close_shares", {}, 30);
      },
      [&] {
        // Log out of the share whatever happened: an open session holds the server.
        try {
          a.client.call("close_shares", {}, 30);
        } catch (const Error&) {
        }
      });
}

}  // namespace cp::pipeline
