// What a plan will measure, stage by stage, before anything connects
// (`diagnose --dry-run`, the runner's ETA, the plan's sample limit): the
// stages in the order the runner takes them, each with the most samples it
// takes and the bytes they move.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/text.h"
#include "core/units.h"
#include "pipeline/plan.h"
#include "transfer/driver.h"

namespace cp::pipeline {

std::vector<StageOutline> plan_outline(const Plan& plan) {
  auto sizes_text = [](const std::vector<uint64_t>& sizes) {
    std::vector<std::string> out;
    for (uint64_t v : sizes) out.push_back(format_size(v));
    return join(out, ", ");
  };
  auto sum = [](const std::vector<uint64_t>& sizes) {
    uint64_t total = 0;
    for (uint64_t v : sizes) total += v;
    return total;
  };
  std::vector<StageOutline> out;
  if (plan.disk_enabled) {
    for (const auto* e : {&plan.server, &plan.client}) {
      const bool server = e == &plan.server;
      int n = static_cast<int>(plan.disk_sizes.size()) * plan.disk_count * 2;
      uint64_t bytes = sum(plan.disk_sizes) * static_cast<uint64_t>(plan.disk_count) * 2;
      // The server's smallest files once more, with a flush per block (disk.cc).
      const uint64_t smallest = plan.disk_sizes.empty() ? 0
                                                        : *std::min_element(plan.disk_sizes.begin(),
                                                                            plan.disk_sizes.end());
      if (server && smallest > 0) {
        n += plan.disk_count;
        bytes += smallest * static_cast<uint64_t>(plan.disk_count);
      }
      out.push_back(
          {server ? "disk server" : "disk client",
           fmt::format(
               "{} x {} files, written then read uncached{}, in {}", sizes_text(plan.disk_sizes),
               plan.disk_count,
               server && smallest > 0 ? ", the smallest also written with a flush per block" : "",
               e->disk_dir),
           n, bytes});
    }
  }
  if (plan.files_enabled) {
    const int passes = plan.files_order == "both" ? 2 : 1;
    for (const auto* e : {&plan.server, &plan.client}) {
      out.push_back(
          {e == &plan.server ? "files server" : "files client",
           fmt::format("{} pass(es) of {} files of {} in {} directories: create, stat, "
                       "read, delete{}, in {}",
                       passes, plan.files_count, format_size(plan.files_size), plan.files_dirs,
                       plan.files_budget > 0
                           ? fmt::format(", at most {:g} s per pass", plan.files_budget)
                           : "",
                       e->disk_dir),
           passes * 4, plan.files_count * plan.files_size * 2 * uint64_t(passes)});
    }
  }
  if (plan.tcp_enabled) {
    for (const char* dir : {"server->client", "client->server"}) {
      out.push_back(
          {fmt::format("tcp {}", dir),
           fmt::format("{} samples of {:g} s, RAM to RAM{}", plan.tcp_count, plan.tcp_seconds,
                       plan.tcp_streams == kAutoTcpStreams ? ", then more streams at once "
                                                             "where one is CPU-bound"
                       : plan.tcp_streams > 1 ? fmt::format(", then {} with {} streams",
                                                            plan.tcp_count, plan.tcp_streams)
                                              : ""),
           plan.tcp_streams > 1 ? plan.tcp_count * 2 : plan.tcp_count, 0});
    }
  }
  // Protocol stages in the order the runner takes them: RAM shares (stage 3)
  // before disk shares (stage 4).
  std::vector<const SharePlan*> shares;
  for (const char* medium : {"ram", "disk"}) {
    for (const SharePlan& sh : plan.shares) {
      if (sh.medium == medium) shares.push_back(&sh);
    }
  }
  if (plan.proto_enabled) {
    for (const SharePlan* share : shares) {
      const SharePlan& sh = *share;
      const int n = static_cast<int>(plan.proto_sizes.size()) * plan.proto_count * 2;
      out.push_back(
          {sh.name,
           fmt::format("{} ({}, {}): {} x {} files each way{}", sh.url, sh.driver, sh.medium,
                       sizes_text(plan.proto_sizes), plan.proto_count,
                       plan.proto_budget > 0 ? fmt::format(", at most {:g} s per size and "
                                                           "direction once {} are in",
                                                           plan.proto_budget, kMinProtoSamples)
                                             : ""),
           n, sum(plan.proto_sizes) * static_cast<uint64_t>(plan.proto_count) * 2});
      if (plan.size_scan) {
        const int cells = static_cast<int>(plan.scan_sizes.size()) * 4;
        out.push_back({"size-scan " + sh.name,
                       fmt::format("requests of {} x 4 patterns (the driver's table may skip "
                                   "some), {} each in a {} file",
                                   sizes_text(plan.scan_sizes), format_size(plan.scan_bytes),
                                   format_size(plan.scan_file)),
                       cells, plan.scan_bytes * static_cast<uint64_t>(cells)});
      }
    }
  }
  // Small files over each share, after every share's big files.
  if (plan.files_enabled && plan.files_shares && plan.proto_enabled) {
    const int passes = plan.files_order == "both" ? 2 : 1;
    for (const SharePlan* share : shares) {
      if (!files_pass_can_run(*share)) continue;
      out.push_back({"files " + share->name,
                     fmt::format("{} pass(es) of {} files of {} over {} ({}): create, stat, read, "
                                 "delete, a request each",
                                 passes, plan.files_count, format_size(plan.files_size), share->url,
                                 share->driver),
                     passes * 4, plan.files_count * plan.files_size * 2 * uint64_t(passes)});
    }
  }
  return out;
}

std::string plan_outline_text(const Plan& plan) {
  std::string out;
  int samples = 0;
  uint64_t bytes = 0;
  for (const StageOutline& s : plan_outline(plan)) {
    out += fmt::format("  {:<22} {:>4} samples  {}\n", s.stage, s.samples, s.what);
    samples += s.samples;
    bytes += s.bytes;
  }
  if (out.empty()) return "  nothing: every stage is disabled\n";
  return out + fmt::format("  {:<22} {:>4} samples  {} moved through files at most\n", "total",
                           samples, format_size(bytes));
}

bool files_pass_can_run(const SharePlan& share) {
  const transfer::DriverSpec* spec = transfer::find_driver_spec(share.driver);
  return spec && spec->caps.mkdir;
}

}  // namespace cp::pipeline
