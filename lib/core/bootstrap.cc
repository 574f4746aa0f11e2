#include "core/bootstrap.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/stats.h"

namespace cp {
namespace {

double median_of(std::vector<double>& v) {
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double upper = v[n / 2];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return (lower + upper) / 2;
}

}  // namespace

RatioInterval bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                     double confidence, int rounds, uint64_t seed) {
  CP_CHECK(confidence > 0 && confidence < 1 && rounds > 0);
  RatioInterval r;
  if (a.empty() || b.empty()) return r;
  std::vector<double> x = a, y = b;
  const double mb = median_of(y);
  if (mb <= 0) return r;
  r.ratio = median_of(x) / mb;
  r.lo = r.hi = r.ratio;
  if (a.size() < 2 && b.size() < 2) return r;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    for (auto& v : x) v = a[pick_a(rng)];
    for (auto& v : y) v = b[pick_b(rng)];
    const double d = median_of(y);
    if (d > 0) ratios.push_back(median_of(x) / d);
  }
  if (ratios.empty()) return r;
  const double tail = (1 - confidence) / 2 * 100;
  r.lo = std::min(r.ratio, percentile(ratios, tail));
  r.hi = std::max(r.ratio, percentile(ratios, 100 - tail));
  return r;
}

}  // namespace cp
