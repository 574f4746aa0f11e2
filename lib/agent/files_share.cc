#include "agent/files_share.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "core/error.h"
#include "probe/cpu.h"
#include "transfer/driver.h"
#include "transfer/share_url.h"

namespace cp::agent {
namespace {

constexpr uint64_t kMaxCount = 1'000'000;  // files (docs/small-files.md: count)
constexpr uint64_t kMaxSize = 1u << 20;    // bytes per file
constexpr uint64_t kMaxInFlight = 1024;

void check_range(const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi) {
    throw Error(
        ErrorKind::kPeer,
        fmt::format("message 'files_share': field '{}' is {}, outside {} .. {}", field, v, lo, hi),
        "the orchestrator and agent builds differ, or the plan's [files] value is out of "
        "range: check both");
  }
}

}  // namespace

msg::FilesShareResult run_files_share(const msg::FilesShareRequest& req, transfer::Session& session,
                                      const transfer::SessionSource& more,
                                      const CancelToken& cancel) {
  check_range("count", req.count, 1, kMaxCount);
  check_range("size", req.size, 0, kMaxSize);
  check_range("dirs", req.dirs, 1, req.count);
  check_range("in_flight", req.in_flight, 1, kMaxInFlight);
  if (req.order != "sequential" && req.order != "random") {
    throw Error(
        ErrorKind::kPeer,
        fmt::format("message 'files_share': field 'order' is '{}', not sequential or random",
                    req.order));
  }
  if (!(req.budget >= 0)) {
    throw Error(ErrorKind::kPeer, "message 'files_share': field 'budget' is negative");
  }
  transfer::check_relative_path(req.root);
  std::optional<files::Phase> only;
  if (!req.phase.empty()) {
    only = files::parse_phase(req.phase);
    if (!only) {
      throw Error(ErrorKind::kPeer,
                  fmt::format("message 'files_share': field 'phase' is '{}', not create, stat, "
                              "read or delete",
                              req.phase),
                  "the orchestrator and agent builds differ: redeploy the agent");
    }
  }
  check_range("existing", req.existing, 0, req.count);

  transfer::FilesPassOptions o;
  o.tree = {.count = req.count, .size = req.size, .dirs = req.dirs};
  o.root = req.root;
  o.random = req.order == "random";
  o.seed = req.seed;
  o.budget_s = req.budget;
  o.in_flight = static_cast<unsigned>(req.in_flight);
  o.laid_out = req.laid_out;
  o.only = only;
  o.existing = req.existing;
  // The client's CPU per phase: a window from one phase's start to the next's.
  std::optional<probe::CpuSampler> cpu;
  std::vector<msg::CpuSummary> cpus;
  o.before_phase = [&](files::Phase) {
    if (cpu) cpus.push_back(cpu->stop());
    cpu.emplace();
    cpu->start();
  };
  const transfer::FilesPassResult r =
      transfer::run_files_pass(session, more, transfer::driver_spec(req.share.driver), o, cancel);
  if (cpu) cpus.push_back(cpu->stop());

  // The phases that ran, each with the client's CPU over it.
  msg::FilesShareResult out;
  size_t window = 0;
  for (size_t i = 0; i < r.phases.size(); ++i) {
    if (only && files::kPhases[i] != *only) continue;
    msg::FilesPhase f{r.phases[i], {}};
    if (window < cpus.size()) f.cpu = cpus[window++];
    out.phases.push_back(std::move(f));
  }
  out.kept = r.kept;
  out.in_flight = r.in_flight;
  out.in_flight_note = r.in_flight_note;
  out.created = r.created;
  out.leftover = r.leftover;
  for (const auto& [k, v] : session.properties()) out.properties[k] = v;
  return out;
}

}  // namespace cp::agent
