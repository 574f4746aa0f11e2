// How sure a ratio of two medians is: a percentile bootstrap interval, so a
// verdict can tell "the protocol reaches 43 % of TCP" from "they are within
// each other's noise".
#pragma once

#include <cstdint>
#include <vector>

namespace cp {

struct RatioInterval {
  double ratio = 0;  // median(a) / median(b); 0 when either side is empty or b's median is 0
  double lo = 0;     // bounds of the central `confidence` interval of that ratio
  double hi = 0;
};

// Resamples each side with replacement `rounds` times (a fixed seed: the same
// samples give the same interval). With one sample a side the interval is the
// point itself: nothing shows the spread.
RatioInterval bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                     double confidence = 0.95, int rounds = 2000,
                                     uint64_t seed = 0x5eed);

}  // namespace cp
