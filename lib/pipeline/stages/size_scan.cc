// The transfer-size scan of one share (pipeline/stage.h). Stored and wire
// names keep the word it had before ("sweep" belongs to tune now): the
// stage's parameter {"sweep": true}, the samples' ops "sweep-<pattern>"
// and the agent request "sweep", so runs stored earlier read the same.
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <set>
#include <string_view>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/random.h"
#include "core/units.h"
#include "link/agent_port.h"
#include "transfer/driver.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentPort;

namespace {

constexpr const char* kScanPatterns[] = {"seqread", "randread", "seqwrite", "randwrite"};

}  // namespace

// The transfer-size scan of one share: for each request size, sequential
// and random reads of one laid-out file, then sequential and random writes.
// Patterns the driver's table says it cannot do (random access over FTP:
// transfer/driver.h Capabilities) are skipped with a note, without asking the
// agent; one the agent still refuses as unsupported is skipped the same way.
void size_scan_stage(StageContext& ctx, const SharePlan& share) {
  const Plan& plan = ctx.plan;
  RunObserver& obs = ctx.obs;
  const CancelToken& cancel = ctx.cancel;
  Agents& a = ctx.agents;
  StageRecord rec =
      new_stage(share.driver, share.medium,
                {{"share", share.name},
                 {"url", share.url},
                 {"medium", share.medium},
                 {"sweep", true},
                 {"sizes", json::array(plan.scan_sizes.begin(), plan.scan_sizes.end())},
                 {"bytes", plan.scan_bytes},
                 {"file", plan.scan_file}});
  const msg::ShareRef share_ref = share_message(share, a);
  const bool has_server = !share.server_dir.empty();
  const json::object cpu_start = msg::to_json(server_connection(share, a));
  run_series(
      ctx, rec, fmt::format("{} size scan ({})", share.driver, share.name), [&](StageScope& stage) {
        std::string prefix;
        // Random parts: another user of a shared server cannot plant a link or
        // file at a name before it is made.
        const std::string tag = random_hex(8);
        const std::string source = fmt::format("scan-source-{}.dat", tag);
        if (has_server) {
          prefix = share_run_prefix(a, share, obs);
          a.server.call("make_file",
                        msg::to_json(msg::FileRequest{share.server_dir, source, plan.scan_file,
                                                      1u << 20, share.medium == "disk",
                                                      /*shared=*/true}),
                        kCallTimeout, {}, &cancel);
        }
        std::set<std::string> unsupported;
        const transfer::Capabilities caps = transfer::driver_spec(share.driver).caps;
        for (const char* pattern : kScanPatterns) {
          const std::string_view p = pattern;
          if (const char* lacks = caps.lacks(p.ends_with("write"), p.starts_with("rand"))) {
            unsupported.insert(pattern);
            obs.on_note(
                fmt::format("{} size scan: {} skipped: the {} driver has no {} (`chokepoint "
                            "drivers` lists what each driver does)",
                            share.name, pattern, share.driver, lacks));
          }
        }
        int seq = 0;
        const int cells = static_cast<int>(plan.scan_sizes.size() * 4);
        for (uint64_t request : plan.scan_sizes) {
          for (const char* pattern : kScanPatterns) {
            cancel.check();
            if (unsupported.count(pattern)) continue;
            const bool write = std::string(pattern).find("write") != std::string::npos;
            const std::string file =
                write ? fmt::format("scan-{}-{}-{}.dat", pattern, request, tag) : source;
            stored::Sample s;
            s.op = std::string("sweep-") + pattern;
            s.size = request;
            s.started_at = wall_seconds();
            if (has_server) a.server.call("cpu_start", cpu_start, 30);
            const msg::SizeScanRequest req{share_ref, prefix + file,   pattern,
                                           request,   plan.scan_bytes, plan.scan_file};
            msg::SizeScanResult r;
            try {
              r = ask<msg::SizeScanResult>(a.client, "sweep", req, kCallTimeout, {}, &cancel);
            } catch (const Error& e) {
              if (e.kind() == ErrorKind::kCancelled) throw;
              if (has_server) a.server.call("cpu_stop", {}, 30);
              if (e.kind() == ErrorKind::kUnsupported) {
                unsupported.insert(pattern);
                obs.on_note(
                    fmt::format("{} size scan: {} skipped: {}", share.name, pattern, e.what()));
                continue;
              }
              s.seq = ++seq;
              s.error = e.what();
              obs.on_sample(stage.id(), s);
              throw;
            }
            s.cpu = std::vector<stored::EndCpu>{{kClient, r.cpu}};
            if (has_server) {
              s.cpu->push_back(
                  {kServer, msg::cpu_summary_from_json(a.server.call("cpu_stop", {}, 30))});
              if (write) {
                a.server.call("remove_file", msg::to_json(msg::FileRequest{share.server_dir, file}),
                              30);
              }
            }
            s.seq = ++seq;
            s.bytes = r.bytes;
            s.seconds = r.seconds;
            s.details.kind = msg::SizeScanDetails{share.name, pattern, request};
            obs.on_sample(stage.id(), s);
            obs.on_progress(
                {fmt::format("{} size scan {} {}", share.driver, pattern, format_size(request)),
                 seq, cells, s.bytes, s.seconds, true});
          }
        }
        if (has_server)
          a.server.call("remove_file", msg::to_json(msg::FileRequest{share.server_dir, source}),
                        30);
      });
}

}  // namespace cp::pipeline
