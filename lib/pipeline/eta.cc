#include "pipeline/eta.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cp::pipeline {
namespace {

// What one sample costs beyond its bytes (connects, opens, the agents' calls), s.
constexpr double kSampleOverhead = 0.2;

}  // namespace

RunEta::RunEta(const Plan& plan)
    : tcp_seconds_(plan.tcp_seconds),
      budget_s_(plan.proto_budget),
      series_(static_cast<int>(plan.proto_sizes.size()) * 2),
      settle_s_(plan.disk_settle),
      disk_sizes_(static_cast<int>(plan.disk_sizes.size())) {
  for (StageOutline& o : plan_outline(plan)) {
    Kind k = Kind::kProtocol;
    if (o.stage.rfind("disk ", 0) == 0) {
      k = Kind::kDisk;
    } else if (o.stage.rfind("tcp ", 0) == 0) {
      k = Kind::kTcp;
    } else if (o.stage.rfind("size-scan ", 0) == 0) {
      k = Kind::kSizeScan;
    } else if (o.stage.rfind("files ", 0) == 0) {
      k = Kind::kFiles;
    }
    stages_.push_back({std::move(o), k});
  }
}

void RunEta::stage_begun() {
  if (stage_ + 1 < stage_count()) ++stage_;
}

void RunEta::sample_done(const Progress& p) {
  if (stage_ < 0 || p.seconds <= 0) return;
  Stage& s = stages_[stage_];
  ++s.done;
  ++done_[int(s.kind)];
  bytes_[int(s.kind)] += double(p.bytes);
  seconds_[int(s.kind)] += p.seconds;
}

std::string RunEta::stage_name() const { return stage_ < 0 ? "" : stages_[stage_].outline.stage; }

double RunEta::rate_of(Kind k) const {
  auto rate = [this](Kind kind) {
    const int i = int(kind);
    return seconds_[i] > 0 ? bytes_[i] / seconds_[i] : 0.0;
  };
  if (double r = rate(k); r > 0) return r;
  // A protocol moves at most what TCP carries; a size scan's small requests at
  // most what its protocol's files did.
  for (Kind other : {Kind::kProtocol, Kind::kTcp, Kind::kDisk}) {
    if (double r = rate(other); r > 0) return r;
  }
  return 0;
}

double RunEta::stage_remaining_s(const Stage& s, int samples_left) const {
  if (samples_left <= 0) return 0;
  if (s.kind == Kind::kTcp) return samples_left * (tcp_seconds_ + kSampleOverhead);
  // A small-file phase: as long as those done so far took on average, else a second.
  if (s.kind == Kind::kFiles) {
    const int i = int(Kind::kFiles);
    return samples_left * (done_[i] > 0 ? seconds_[i] / done_[i] : 1.0);
  }
  const double rate = rate_of(s.kind);
  if (rate <= 0) return -1;
  const double per_sample = s.outline.samples > 0 ? double(s.outline.bytes) / s.outline.samples : 0;
  double t = samples_left * (per_sample / rate + kSampleOverhead);
  if (s.kind == Kind::kDisk && s.done == 0) t += settle_s_ * disk_sizes_;
  // A protocol series stops once past its budget: at most that per series left.
  if (s.kind == Kind::kProtocol && budget_s_ > 0 && s.outline.samples > 0 && series_ > 0) {
    const double per_series = double(s.outline.samples) / series_;
    const double series_left = std::ceil(samples_left / per_series);
    t = std::min(t, series_left * (budget_s_ + per_sample / rate));
  }
  return t;
}

double RunEta::remaining_s(const Progress& live) const {
  double total = 0;
  for (int i = std::max(stage_, 0); i < stage_count(); ++i) {
    const Stage& s = stages_[i];
    int left = s.outline.samples - (i == stage_ ? s.done : 0);
    double t = stage_remaining_s(s, left);
    if (t < 0) return -1;
    // The sample under way has already spent its seconds so far.
    if (i == stage_ && !live.done && left > 0) t = std::max(0.0, t - live.seconds);
    total += t;
  }
  return total;
}

std::string format_eta(double seconds) {
  if (seconds < 0) return "";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} s", s);
}

}  // namespace cp::pipeline
