// Summary statistics of samples (throughputs in bytes/s, or anything else).
#pragma once

#include <cstddef>
#include <vector>

namespace cp {

struct Summary {
  size_t n = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 when n < 2
};

// Summary of `values`; all zeros when empty.
Summary summarize(std::vector<double> values);

// Linear-interpolated percentile, p in [0, 100]; values need not be sorted.
double percentile(std::vector<double> values, double p);

// The Mann-Whitney U test (Wilcoxon rank-sum), two-sided: do two sets of
// samples come from distributions where one tends to be larger? It assumes
// nothing about their shape, which suits throughput samples (skewed, few).
// Computed as scipy.stats.mannwhitneyu(a, b) does by default, except that
// the exact distribution is used whenever both sides have at most
// kUExactMax samples and there are no ties (scipy: either side <= 8).
struct UTest {
  size_t n1 = 0, n2 = 0;
  double u = 0;          // U of `a`: pairs (x of a, y of b) with x > y, a tie counting 1/2
  double p = 1;          // two-sided p-value; 1 when too_few
  bool exact = false;    // p from the exact distribution, else the normal
                         // approximation with tie and continuity corrections
  bool too_few = false;  // a side has fewer than kUMinSamples: no p-value
};

inline constexpr size_t kUMinSamples = 3;
inline constexpr size_t kUExactMax = 10;

UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p-value the exact test can reach with n1 and n2
// samples and no ties: 2 / C(n1+n2, n1) (3 vs 3: 0.1, so it can never
// show a change at p < 0.05; 4 vs 4: 0.029).
double mann_whitney_min_p(size_t n1, size_t n2);

// Holm's step-down adjustment of `p` (any order) for testing them as one
// family: sorted ascending, the i-th smallest (1-based) becomes
// max over j <= i of min(1, (m - j + 1) p_(j)), returned in the input's
// order. Rejecting where adjusted p < alpha bounds the chance of any false
// rejection in the family by alpha, whatever the dependence between the
// tests (R: p.adjust(p, "holm")).
std::vector<double> holm_adjust(const std::vector<double>& p);

// The spread of samples relative to their level: interquartile range /
// median (linear-interpolated quartiles, as percentile()); 0 when empty or
// the median is 0.
double relative_iqr(const std::vector<double>& values);

}  // namespace cp
