// Stage 1: each end's local disk (pipeline/stage.h).
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/units.h"
#include "core/wire.h"
#include "link/agent_port.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentPort;

namespace {

std::string series_label(const std::string& where, const std::string& op, uint64_t size) {
  return fmt::format("disk {} {} {}", where, op, format_size(size));
}

}  // namespace

void disk_stage(StageContext& ctx, const std::string& where) {
  const Plan& plan = ctx.plan;
  RunObserver& obs = ctx.obs;
  const CancelToken& cancel = ctx.cancel;
  AgentPort& agent = ctx.agent_on(where);
  const std::string& dir = ctx.disk_dir_on(where);
  StageRecord rec =
      new_stage("disk", where,
                {{"dir", dir},
                 {"sizes", json::array(plan.disk_sizes.begin(), plan.disk_sizes.end())},
                 {"count", plan.disk_count},
                 {"block", plan.disk_block},
                 {"settle", plan.disk_settle}});
  run_series(ctx, rec, fmt::format("disk stage on {}", where), [&](StageScope& stage) {
    uint64_t biggest = 0;
    for (auto s : plan.disk_sizes) biggest = std::max(biggest, s);
    // All files of one size exist at once (written, then read back).
    ask<msg::CheckSpaceResult>(agent, "check_space",
                               msg::CheckSpaceRequest{dir, biggest * uint64_t(plan.disk_count), ""},
                               30);
    int seq = 0;
    // The server also writes its smallest files with a flush per block, as a
    // file server with sync on does (Samba's `sync always`, an NFS `sync`
    // export): the rate "capped by synchronous writes" is held against.
    std::vector<std::pair<uint64_t, const char*>> series;
    for (uint64_t size : plan.disk_sizes) {
      series.emplace_back(size, "write");
      series.emplace_back(size, "read");
    }
    if (where == kServer && !plan.disk_sizes.empty()) {
      series.emplace_back(*std::min_element(plan.disk_sizes.begin(), plan.disk_sizes.end()),
                          "syncwrite");
    }
    for (const auto& [size, op] : series) {
      const std::string label = series_label(where, op, size);
      if (std::string(op) == "read") {
        // Let writeback of what was just written finish before timing reads.
        const double until = monotonic_seconds() + plan.disk_settle;
        while (monotonic_seconds() < until) {
          cancel.check();
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
      for (int i = 1; i <= plan.disk_count; ++i) {
        cancel.check();
        // A distinct file per sample: a second copy of one file would come
        // from the page cache.
        const bool write = std::string(op) == "write";
        const bool sync = std::string(op) == "syncwrite";
        const std::string file = fmt::format("{}{}-{}-{}.dat", sync ? "sync-" : "", where, size, i);
        const msg::DiskRequest req{dir,
                                   op,
                                   file,
                                   write || sync ? size : 0,
                                   plan.disk_block,
                                   /*delete_after=*/!write};
        stored::Sample s;
        s.seq = ++seq;
        s.op = op;
        s.size = size;
        s.started_at = wall_seconds();
        auto progress = [&](uint64_t b, double t) {
          obs.on_progress({label, i, plan.disk_count, b, t, false});
        };
        msg::DiskResult r;
        try {
          r = ask<msg::DiskResult>(agent, "disk", req, kCallTimeout, progress, &cancel);
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::kCancelled) throw;
          s.error = e.what();
          obs.on_sample(stage.id(), s);
          throw;
        }
        s.bytes = r.bytes;
        s.seconds = r.seconds;
        s.cache_possible = r.cache_possible;
        s.details.kind =
            msg::DiskDetails{file,        r.method,        r.direct,
                             r.huge_page, plan.disk_block, r.cache_possible ? r.cache_reason : ""};
        s.cpu = std::vector<stored::EndCpu>{{where, r.cpu}};
        flag_stall(plan, s, {&agent}, 0, obs);
        obs.on_sample(stage.id(), s);
        obs.on_progress({label, i, plan.disk_count, s.bytes, s.seconds, true});
      }
    }
  });
}

}  // namespace cp::pipeline
