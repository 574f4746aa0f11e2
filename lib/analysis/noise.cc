// Noise: is a layer below, at, or above the layer beneath?
#include <algorithm>
#include <cmath>

#include "analysis/judge.h"

namespace cp::analysis {

Level level_of(double ratio, double lo, double hi, double median, const Row& beneath) {
  if (ratio > kFasterThanBeneath) {
    if (lo > 1 && median > beneath.rate.max) return Level::kFaster;
    return lo >= kAtCeiling ? Level::kCeiling : Level::kNoise;
  }
  if (ratio >= kAtCeiling) return Level::kCeiling;
  return hi >= kAtCeiling ? Level::kNoise : Level::kBelow;
}

Level level_of(const Row& r, const Row& beneath) {
  return level_of(r.ratio, r.ratio_lo, r.ratio_hi, r.rate.median, beneath);
}

// Samples per row that would likely narrow the interval enough to decide.
int suggested_count(const Row& r) {
  const size_t n = std::max<size_t>(r.rate.n, 1);
  const double half = (r.ratio_hi - r.ratio_lo) / 2;
  const double margin = std::max(0.02, std::fabs(r.ratio - (r.ratio > 1 ? 1.0 : kAtCeiling)));
  const double want = std::ceil(double(n) * (half / margin) * (half / margin));
  return static_cast<int>(std::clamp(want, double(n + 5), 100.0));
}

uint64_t round_size_up(double bytes) {
  const double step = std::pow(10.0, std::floor(std::log10(std::max(bytes, 1.0))) - 1);
  return static_cast<uint64_t>(std::ceil(bytes / step) * step);
}

}  // namespace cp::analysis
