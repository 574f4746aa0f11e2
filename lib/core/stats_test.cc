#include "core/stats.h"

#include <gtest/gtest.h>

namespace cp {

TEST(Stats, OddAndEvenMedians) {
  EXPECT_DOUBLE_EQ(summarize({3, 1, 2}).median, 2);
  EXPECT_DOUBLE_EQ(summarize({4, 1, 2, 3}).median, 2.5);
}

TEST(Stats, SummaryFields) {
  // The hand method's Linux RAID reads: 71.7 and 75.6 MB/s.
  Summary s = summarize({71.7, 75.6});
  EXPECT_EQ(s.n, 2u);
  EXPECT_DOUBLE_EQ(s.min, 71.7);
  EXPECT_DOUBLE_EQ(s.max, 75.6);
  EXPECT_NEAR(s.mean, 73.65, 1e-9);
  EXPECT_NEAR(s.stddev, 2.7577164466, 1e-9);
}

TEST(Stats, EmptyIsZero) {
  Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.median, 0);
}

TEST(Stats, Percentile) {
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 25), 20);
  EXPECT_DOUBLE_EQ(percentile({10, 20}, 50), 15);
  EXPECT_DOUBLE_EQ(percentile({7}, 90), 7);
}

}  // namespace cp
