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

// Reference values are scipy.stats.mannwhitneyu(a, b) (two-sided, method
// "auto"), worked out by hand below so they can be checked without scipy.

TEST(MannWhitney, ExactNoOverlap) {
  // U1 = 0; only 1 of C(10, 5) = 252 orderings is as extreme in each tail:
  // p = 2 / 252.
  UTest t = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(t.exact);
  EXPECT_FALSE(t.too_few);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.p, 2.0 / 252, 1e-12);
  EXPECT_LT(t.p, 0.05);
}

TEST(MannWhitney, ExactInterleaved) {
  // a = 1 3 5, b = 2 4 6: U1 = 0 + 1 + 2 = 3, U2 = 9 - 3 = 6. Counts of U
  // over the 20 orderings of 3 vs 3, k = 0..9: 1 1 2 3 3 3 3 2 1 1.
  // P(U >= 6) = (3 + 2 + 1 + 1) / 20; p = 2 * 7/20 = 0.7 (scipy: 0.7).
  UTest t = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.p, 0.7, 1e-12);
}

TEST(MannWhitney, ExactUnequalSizes) {
  // a = 10 12 14 16 18 20, b = 11 13 15: U1 = 0+1+2+3+3+3 = 12 of 18, U2 = 6.
  // 23 of the C(9, 3) = 84 orderings have U >= 12: p = 46/84 = 0.547619
  // (scipy: 0.5476190476190477).
  UTest t = mann_whitney_u({10, 12, 14, 16, 18, 20}, {11, 13, 15});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 12);
  EXPECT_NEAR(t.p, 46.0 / 84, 1e-12);
  // The test is symmetric in its arguments.
  EXPECT_NEAR(mann_whitney_u({11, 13, 15}, {10, 12, 14, 16, 18, 20}).p, t.p, 1e-12);
}

TEST(MannWhitney, TiesUseTheNormalApproximation) {
  // a = 1 2 2 3 4, b = 2 3 5 6 7. Pooled ranks: 1->1, 2->3 (three ways tied
  // at 2,3,4), 3->5.5, 4->7, 5->8, 6->9, 7->10. R1 = 1+3+3+5.5+7 = 19.5,
  // U1 = 19.5 - 15 = 4.5, U2 = 20.5. Ties: (27-3) + (8-2) = 30.
  // sd = sqrt(25/12 * (11 - 30/90)) = 4.714045; z = (20.5 - 12.5 - 0.5) / sd
  // = 1.590990; p = 2 * (1 - Phi(z)) = 0.111612 (scipy: 0.11161176829829222).
  UTest t = mann_whitney_u({1, 2, 2, 3, 4}, {2, 3, 5, 6, 7});
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 4.5);
  EXPECT_NEAR(t.p, 0.11161176829829222, 1e-9);
}

TEST(MannWhitney, LargeSamplesUseTheNormalApproximation) {
  // a = 1..12, b = 7.5..18.5 (12 each, no ties): U1 = 1+2+3+4+5 = 15,
  // U2 = 129; sd = sqrt(144/12 * 25) = 17.320508; z = (129 - 72 - 0.5) / sd
  // = 3.262029; p = 0.0011061782 (scipy: 0.0011061781840807242).
  std::vector<double> a, b;
  for (int i = 1; i <= 12; ++i) {
    a.push_back(i);
    b.push_back(i + 6.5);
  }
  UTest t = mann_whitney_u(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 15);
  EXPECT_NEAR(t.p, 0.0011061781840807242, 1e-9);
}

TEST(MannWhitney, TooFewSamplesGiveNoPValue) {
  UTest t = mann_whitney_u({1, 2}, {5, 6, 7});
  EXPECT_TRUE(t.too_few);
  EXPECT_DOUBLE_EQ(t.p, 1);
  EXPECT_DOUBLE_EQ(t.u, 0);
}

TEST(MannWhitney, IdenticalValuesShowNoDifference) {
  UTest t = mann_whitney_u({5, 5, 5, 5}, {5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(t.p, 1);
  EXPECT_DOUBLE_EQ(t.u, 8);
}

TEST(MannWhitney, SmallestReachableP) {
  EXPECT_NEAR(mann_whitney_min_p(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(4, 4), 2.0 / 70, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(5, 10), 2.0 / 3003, 1e-12);
}

}  // namespace cp

namespace cp {

// Reference values: R's p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") =
// 0.03 0.06 0.06 0.02 (sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02 0.03
// 0.06 0.04, the last raised to 0.06 so the adjusted values keep their order).
TEST(Holm, AdjustsInTheInputsOrder) {
  std::vector<double> adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_NEAR(adj[0], 0.03, 1e-12);
  EXPECT_NEAR(adj[1], 0.06, 1e-12);
  EXPECT_NEAR(adj[2], 0.06, 1e-12);
  EXPECT_NEAR(adj[3], 0.02, 1e-12);
}

TEST(Holm, CapsAtOneAndKeepsASingleTest) {
  EXPECT_EQ(holm_adjust({0.3}), std::vector<double>{0.3});
  std::vector<double> adj = holm_adjust({0.4, 0.5, 0.6});
  EXPECT_DOUBLE_EQ(adj[0], 1);
  EXPECT_DOUBLE_EQ(adj[1], 1);
  EXPECT_DOUBLE_EQ(adj[2], 1);
  EXPECT_TRUE(holm_adjust({}).empty());
}

TEST(Holm, TiedPValuesGetOneAdjustedValue) {
  // Two rows at the 5 vs 5 exact minimum among 4: both 4 x 2/252.
  std::vector<double> adj = holm_adjust({2.0 / 252, 0.5, 2.0 / 252, 0.9});
  EXPECT_NEAR(adj[0], 8.0 / 252, 1e-12);
  EXPECT_NEAR(adj[2], 8.0 / 252, 1e-12);
  EXPECT_NEAR(adj[1], 1.0, 1e-12);  // 2 x 0.5
  EXPECT_NEAR(adj[3], 1.0, 1e-12);
}

TEST(RelativeIqr, IsQuartileRangeOverMedian) {
  // Quartiles of 10..50 step 10: 20 and 40; median 30.
  EXPECT_DOUBLE_EQ(relative_iqr({50, 10, 30, 20, 40}), 20.0 / 30);
  EXPECT_DOUBLE_EQ(relative_iqr({7, 7, 7}), 0);
  EXPECT_DOUBLE_EQ(relative_iqr({}), 0);
  EXPECT_DOUBLE_EQ(relative_iqr({0, 0, 0}), 0);
}

}  // namespace cp
