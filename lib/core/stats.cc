#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace cp {

double percentile(std::vector<double> values, double p) {
  CP_CHECK(p >= 0 && p <= 100);
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  s.median = percentile(values, 50);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  if (s.n >= 2) {
    double ss = 0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  return s;
}

double mann_whitney_min_p(size_t n1, size_t n2) {
  // C(n1+n2, n1) as a double, multiplied up term by term.
  double c = 1;
  for (size_t i = 1; i <= n1; ++i) c = c * static_cast<double>(n2 + i) / static_cast<double>(i);
  return std::min(1.0, 2 / c);
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> out(m);
  double running = 0;  // adjusted p-values never fall as p rises
  for (size_t i = 0; i < m; ++i) {
    CP_CHECK(p[order[i]] >= 0 && p[order[i]] <= 1);
    running = std::max(running, std::min(1.0, static_cast<double>(m - i) * p[order[i]]));
    out[order[i]] = running;
  }
  return out;
}

double relative_iqr(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double median = percentile(values, 50);
  if (median == 0) return 0;
  return (percentile(values, 75) - percentile(values, 25)) / std::abs(median);
}

namespace {

// P(U >= u) under the null hypothesis, no ties: the number of orderings of
// n1 + n2 distinct values whose U is k, f(i, j, k), follows from where the
// largest value goes: into a (it beats all j of b) or into b.
//   f(i, j, k) = f(i-1, j, k-j) + f(i, j-1, k),  f(i, 0, 0) = f(0, j, 0) = 1.
double exact_upper_tail(size_t n1, size_t n2, double u) {
  const size_t max_u = n1 * n2;
  // f[i][j] is a vector over k = 0..i*j.
  std::vector<std::vector<std::vector<double>>> f(n1 + 1, std::vector<std::vector<double>>(n2 + 1));
  for (size_t i = 0; i <= n1; ++i) {
    for (size_t j = 0; j <= n2; ++j) {
      std::vector<double>& cur = f[i][j];
      cur.assign(i * j + 1, 0);
      if (i == 0 || j == 0) {
        cur[0] = 1;
        continue;
      }
      const auto& with_a = f[i - 1][j];
      const auto& with_b = f[i][j - 1];
      for (size_t k = 0; k < cur.size(); ++k) {
        if (k >= j && k - j < with_a.size()) cur[k] += with_a[k - j];
        if (k < with_b.size()) cur[k] += with_b[k];
      }
    }
  }
  const auto& dist = f[n1][n2];
  double total = 0, tail = 0;
  for (size_t k = 0; k <= max_u; ++k) {
    total += dist[k];
    if (static_cast<double>(k) >= u - 1e-9) tail += dist[k];
  }
  return tail / total;
}

}  // namespace

UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  UTest t;
  t.n1 = a.size();
  t.n2 = b.size();
  // U by counting pairs: O(n1 n2), fine for the tens of samples a stage has.
  for (double x : a) {
    for (double y : b) t.u += x > y ? 1 : x == y ? 0.5 : 0;
  }
  if (t.n1 < kUMinSamples || t.n2 < kUMinSamples) {
    t.too_few = true;
    return t;
  }
  const double n1 = static_cast<double>(t.n1), n2 = static_cast<double>(t.n2);
  const double n = n1 + n2;
  // Tie groups in the pooled samples: sum of t^3 - t over groups of size t.
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::sort(pooled.begin(), pooled.end());
  double tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j] == pooled[i]) ++j;
    const double g = static_cast<double>(j - i);
    tie_term += g * g * g - g;
    i = j;
  }
  // The larger of U1 and U2 = n1 n2 - U1: the distribution is symmetric.
  const double u_big = std::max(t.u, n1 * n2 - t.u);
  if (tie_term == 0 && t.n1 <= kUExactMax && t.n2 <= kUExactMax) {
    t.exact = true;
    t.p = std::min(1.0, 2 * exact_upper_tail(t.n1, t.n2, u_big));
    return t;
  }
  const double sd = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sd <= 0) return t;  // every value equal: no evidence of a difference
  const double z = (u_big - n1 * n2 / 2 - 0.5) / sd;   // 0.5: continuity correction
  t.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 * P(Z > z)
  return t;
}

}  // namespace cp
