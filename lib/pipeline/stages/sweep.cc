// The transfer-size sweep of one share (pipeline/stage.h).
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <set>

#include "core/error.h"
#include "core/units.h"
#include "core/wire.h"
#include "remote/agent_link.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentLink;

// The transfer-size sweep of one share: for each request size, sequential
// and random reads of one laid-out file, then sequential and random writes.
// Patterns the driver cannot do (random access over FTP) are skipped with a note.
void sweep_stage(StageContext& ctx, const SharePlan& share) {
  const Plan& plan = ctx.plan;
  RunObserver& obs = ctx.obs;
  const CancelToken& cancel = ctx.cancel;
  Agents& a = ctx.agents;
  StageRecord rec;
  rec.layer = share.driver;
  rec.where = share.medium;
  json::array sizes;
  for (auto s : plan.sweep_sizes) sizes.push_back(s);
  rec.params_json = json::serialize(json::object{{"share", share.name},
                                                 {"url", share.url},
                                                 {"medium", share.medium},
                                                 {"sweep", true},
                                                 {"sizes", sizes},
                                                 {"bytes", plan.sweep_bytes},
                                                 {"file", plan.sweep_file}});
  const json::object share_msg = share_message(share, a);
  const bool has_server = !share.server_dir.empty();
  run_series(
      ctx, rec, fmt::format("{} sweep ({})", share.driver, share.name), [&](StageScope& stage) {
        std::string prefix;
        const std::string source = "sweep-source.dat";
        if (has_server) {
          prefix = share_run_prefix(a, share, obs);
          a.server.call("make_file",
                        {{"dir", share.server_dir},
                         {"name", source},
                         {"size", plan.sweep_file},
                         {"evict", share.medium == "disk"},
                         {"shared", true}},
                        kCallTimeout, {}, &cancel);
        }
        std::set<std::string> unsupported;
        int seq = 0;
        const int cells = static_cast<int>(plan.sweep_sizes.size() * 4);
        for (uint64_t request : plan.sweep_sizes) {
          for (const char* pattern : {"seqread", "randread", "seqwrite", "randwrite"}) {
            cancel.check();
            if (unsupported.count(pattern)) continue;
            const bool write = std::string(pattern).find("write") != std::string::npos;
            const std::string file =
                write ? fmt::format("sweep-{}-{}.dat", pattern, request) : source;
            SampleRecord s;
            s.op = std::string("sweep-") + pattern;
            s.size = request;
            s.started_at = wall_seconds();
            if (has_server) a.server.call("cpu_start", {}, 30);
            json::object r;
            try {
              r = a.client.call("sweep",
                                {{"share", share_msg},
                                 {"remote", prefix + file},
                                 {"pattern", pattern},
                                 {"request", request},
                                 {"bytes", plan.sweep_bytes},
                                 {"file_size", plan.sweep_file}},
                                kCallTimeout, {}, &cancel);
            } catch (const Error& e) {
              if (e.kind() == ErrorKind::kCancelled) throw;
              if (has_server) a.server.call("cpu_stop", {}, 30);
              if (e.kind() == ErrorKind::kUnsupported) {
                unsupported.insert(pattern);
                obs.on_note(fmt::format("{} sweep: {} skipped: {}", share.name, pattern, e.what()));
                continue;
              }
              s.seq = ++seq;
              s.error = e.what();
              obs.on_sample(stage.id(), s);
              throw;
            }
            json::object cpu{{"client", wire::get_object(r, "cpu")}};
            if (has_server) {
              cpu["server"] = a.server.call("cpu_stop", {}, 30);
              if (write)
                a.server.call("remove_file", {{"dir", share.server_dir}, {"name", file}}, 30);
            }
            s.seq = ++seq;
            s.bytes = wire::get_u64(r, "bytes");
            s.seconds = wire::get_double(r, "seconds");
            s.details_json = json::serialize(
                json::object{{"share", share.name}, {"pattern", pattern}, {"request", request}});
            s.cpu_json = json::serialize(cpu);
            obs.on_sample(stage.id(), s);
            obs.on_progress(
                {fmt::format("{} sweep {} {}", share.driver, pattern, format_size(request)), seq,
                 cells, s.bytes, s.seconds, true});
          }
        }
        if (has_server)
          a.server.call("remove_file", {{"dir", share.server_dir}, {"name", source}}, 30);
      });
}

}  // namespace cp::pipeline
