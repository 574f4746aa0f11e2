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

}  // namespace cp
