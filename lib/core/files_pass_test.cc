#include "core/files_pass.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

namespace cp::files {
namespace {

TEST(FilesPass, PhaseNamesRoundTripAndDeleteIsTheStoredName) {
  for (Phase p : kPhases) EXPECT_EQ(parse_phase(phase_name(p)), p);
  EXPECT_EQ(phase_name(Phase::remove), "delete");
  EXPECT_FALSE(parse_phase("remove").has_value());
}

TEST(FilesPass, TreeSpreadsFilesOverItsDirectoriesWithPlainNames) {
  Tree t{25, 4096, 10};
  EXPECT_EQ(t.file_path(0), "d0000/f000000");
  EXPECT_EQ(t.file_path(13), "d0003/f000013");
  std::set<std::string> names;
  for (uint64_t i = 0; i < t.count; ++i) names.insert(t.file_path(i));
  EXPECT_EQ(names.size(), 25u);
}

TEST(FilesPass, RandomOrderIsAPermutationFixedByItsSeed) {
  auto seq = visit_order(1000, false, 7);
  auto a = visit_order(1000, true, 7);
  auto b = visit_order(1000, true, 7);
  auto c = visit_order(1000, true, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, seq);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, seq);
  // The first draws of mt19937_64(7) are fixed by the standard, so another
  // host's library lays out the same order.
  EXPECT_EQ(visit_order(5, true, 7), visit_order(5, true, 7));
}

TEST(FilesPass, DirectoryOrderFillsOneDirectoryAtATimeAscending) {
  const Tree t{25, 0, 10};  // directories of 3, 3, 3, 3, 3, 2, .. files
  const auto order = directory_order(t);
  ASSERT_EQ(order.size(), 25u);
  EXPECT_EQ(std::vector<uint64_t>(order.begin(), order.begin() + 4),
            (std::vector<uint64_t>{0, 10, 20, 1}));
  for (size_t k = 1; k < order.size(); ++k) {
    const uint64_t a = order[k - 1], b = order[k];
    // Never back to an earlier directory; within one, ascending.
    EXPECT_TRUE(t.dir_of(a) < t.dir_of(b) || (t.dir_of(a) == t.dir_of(b) && a < b)) << k;
  }
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, visit_order(25, false, 0));  // each file once

  std::vector<uint64_t> some{24, 3, 10, 0, 13};
  sort_directory_major(t, some);
  EXPECT_EQ(some, (std::vector<uint64_t>{0, 10, 3, 13, 24}));
}

TEST(FilesPass, HistogramPercentilesWithinOneThirtySecondOfTheValues) {
  LatencyHistogram h;
  // 1 .. 1000 us, uniformly: the median 500 us, p99 990 us.
  for (int i = 1; i <= 1000; ++i) h.add(i * 1e-6);
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_NEAR(h.percentile_us(50), 500, 500.0 / 32);
  EXPECT_NEAR(h.percentile_us(99), 990, 990.0 / 32);
  EXPECT_DOUBLE_EQ(h.max_us(), 1000);
  Latency l = summarize(h);
  EXPECT_LE(l.median_us, l.p99_us);
  EXPECT_LE(l.p99_us, l.max_us);
}

TEST(FilesPass, HistogramKeepsAStallSeparateFromTheMedian) {
  // bonnie++'s seed: most creates fast, one 537 ms stall.
  LatencyHistogram h;
  for (int i = 0; i < 999; ++i) h.add(40e-6);
  h.add(0.537);
  EXPECT_NEAR(h.percentile_us(50), 40, 40.0 / 32);
  EXPECT_NEAR(h.percentile_us(99), 40, 40.0 / 32);
  EXPECT_DOUBLE_EQ(h.max_us(), 537000);
}

TEST(FilesPass, HistogramMergesAndHandlesSubMicrosecondAndHugeValues) {
  LatencyHistogram a, b;
  a.add(3e-7);  // a cached stat on tmpfs: 300 ns
  b.add(5e4);   // beyond the top bucket: clamped into it, max exact
  a.merge(b);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_NEAR(a.percentile_us(50), 0.3, 0.3 / 32);
  EXPECT_DOUBLE_EQ(a.max_us(), 5e10);
  EXPECT_EQ(LatencyHistogram{}.percentile_us(50), 0);
}

}  // namespace
}  // namespace cp::files
