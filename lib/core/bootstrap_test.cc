#include "core/bootstrap.h"

#include <gtest/gtest.h>

namespace cp {
namespace {

TEST(BootstrapMedianRatio, TightSamplesGiveATightInterval) {
  const std::vector<double> a = {50, 50.5, 49.5, 50.2, 49.8, 50.1, 49.9, 50, 50.3, 49.7};
  const std::vector<double> b = {100, 101, 99, 100.4, 99.6, 100.2, 99.8, 100, 100.6, 99.4};
  const RatioInterval r = bootstrap_median_ratio(a, b);
  EXPECT_NEAR(r.ratio, 0.5, 1e-9);
  EXPECT_GT(r.lo, 0.49);
  EXPECT_LT(r.hi, 0.51);
  EXPECT_LE(r.lo, r.ratio);
  EXPECT_GE(r.hi, r.ratio);
}

TEST(BootstrapMedianRatio, OverlappingSpreadsCoverParity) {
  // Two noisy layers whose ranges overlap widely: the interval spans 1.
  const std::vector<double> a = {600, 900, 700, 1100, 833, 650, 1000, 750, 950, 800};
  const std::vector<double> b = {500, 800, 640, 1000, 700, 550, 900, 600, 850, 640};
  const RatioInterval r = bootstrap_median_ratio(a, b);
  EXPECT_GT(r.ratio, 1.0);
  EXPECT_LT(r.lo, 1.0);
  EXPECT_GT(r.hi, 1.0);
}

TEST(BootstrapMedianRatio, SameInputSameInterval) {
  const std::vector<double> a = {1, 2, 3, 4, 5}, b = {2, 3, 4, 5, 6};
  const RatioInterval x = bootstrap_median_ratio(a, b), y = bootstrap_median_ratio(a, b);
  EXPECT_DOUBLE_EQ(x.lo, y.lo);
  EXPECT_DOUBLE_EQ(x.hi, y.hi);
}

TEST(BootstrapMedianRatio, EmptyOrZeroGivesNoRatio) {
  EXPECT_EQ(bootstrap_median_ratio({}, {1}).ratio, 0);
  EXPECT_EQ(bootstrap_median_ratio({1}, {0}).ratio, 0);
  const RatioInterval one = bootstrap_median_ratio({3}, {4});
  EXPECT_DOUBLE_EQ(one.lo, 0.75);
  EXPECT_DOUBLE_EQ(one.hi, 0.75);
}

}  // namespace
}  // namespace cp
