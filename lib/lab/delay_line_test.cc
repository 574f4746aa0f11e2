#include "lab/delay_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cp::lab {
namespace {

constexpr int64_t kMs = 1'000'000;  // ns

std::vector<uint8_t> frame(size_t size, uint8_t tag) { return std::vector<uint8_t>(size, tag); }

TEST(DelayQueueTest, FrameLeavesExactlyOneDelayAfterItArrived) {
  DelayQueue q(5 * kMs, 1 << 20);
  EXPECT_EQ(q.next_due_ns(), INT64_MAX);
  ASSERT_TRUE(q.push(100 * kMs, frame(1500, 1)));
  EXPECT_EQ(q.next_due_ns(), 105 * kMs);
  std::vector<std::vector<uint8_t>> out;
  EXPECT_EQ(q.pop_due(105 * kMs - 1, &out), 0u);  // 1 ns early: still held
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(q.pop_due(105 * kMs, &out), 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], frame(1500, 1));
  EXPECT_EQ(q.frames_queued(), 0u);
  EXPECT_EQ(q.bytes_queued(), 0u);
}

TEST(DelayQueueTest, FramesKeepTheirOrderAndSpacing) {
  DelayQueue q(10 * kMs, 1 << 20);
  q.push(0, frame(100, 1));
  q.push(2 * kMs, frame(100, 2));
  q.push(7 * kMs, frame(100, 3));
  std::vector<std::vector<uint8_t>> out;
  EXPECT_EQ(q.pop_due(11 * kMs, &out), 1u);
  EXPECT_EQ(q.next_due_ns(), 12 * kMs);
  EXPECT_EQ(q.pop_due(20 * kMs, &out), 2u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0][0], 1);
  EXPECT_EQ(out[1][0], 2);
  EXPECT_EQ(out[2][0], 3);
}

TEST(DelayQueueTest, FullQueueDropsAndCountsUntilFramesLeave) {
  DelayQueue q(1 * kMs, 3000);
  EXPECT_TRUE(q.push(0, frame(1500, 1)));
  EXPECT_TRUE(q.push(0, frame(1500, 2)));
  EXPECT_FALSE(q.push(0, frame(1, 3)));  // 3001 > 3000
  EXPECT_EQ(q.frames_dropped(), 1u);
  EXPECT_EQ(q.frames_in(), 2u);
  EXPECT_EQ(q.bytes_in(), 3000u);
  EXPECT_EQ(q.max_bytes_queued(), 3000u);
  std::vector<std::vector<uint8_t>> out;
  q.pop_due(1 * kMs, &out);
  EXPECT_EQ(q.bytes_queued(), 0u);
  EXPECT_TRUE(q.push(2 * kMs, frame(3000, 4)));  // room again
  EXPECT_EQ(q.frames_dropped(), 1u);
}

TEST(DelayQueueTest, ZeroDelayPassesFramesAtOnce) {
  DelayQueue q(0, 1 << 20);
  q.push(42, frame(60, 1));
  std::vector<std::vector<uint8_t>> out;
  EXPECT_EQ(q.pop_due(42, &out), 1u);
}

TEST(DelayQueueTest, QueueBoundHoldsTwiceTheDelayAtTheRate) {
  // 1 Gbit/s for 10 ms = 1.25 MB; twice that, but at least 4 MiB.
  EXPECT_EQ(delay_line_queue_bytes(1'000'000'000, 0.010), 4ull << 20);
  // 1 Gbit/s for 50 ms = 6.25 MB; twice that.
  EXPECT_EQ(delay_line_queue_bytes(1'000'000'000, 0.050), 12'500'000u);
  // Unshaped counts as 10 Gbit/s: 12.5 MB for 10 ms, twice that.
  EXPECT_EQ(delay_line_queue_bytes(0, 0.010), 25'000'000u);
  // A 10 s delay unshaped would want 25 GB: held to 256 MiB.
  EXPECT_EQ(delay_line_queue_bytes(0, 10), 256ull << 20);
}

TEST(DelayLineStatsTest, ParsesWhatTheDelayLineWrites) {
  const auto s = parse_delay_line_stats(
      R"({"pid":7,"delay_s":0.005,"queue_bytes":4194304,"directions":[)"
      R"({"from":"sw-s","to":"sw-c","frames":10,"bytes":15000,"dropped":2,"send_errors":1,)"
      R"("max_queued_bytes":3000},{"from":"sw-c","to":"sw-s","frames":5,"bytes":300,)"
      R"("dropped":0,"send_errors":0,"max_queued_bytes":60}]})");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].from, "sw-s");
  EXPECT_EQ(s[0].to, "sw-c");
  EXPECT_EQ(s[0].frames, 10u);
  EXPECT_EQ(s[0].bytes, 15000u);
  EXPECT_EQ(s[0].dropped, 2u);
  EXPECT_EQ(s[0].send_errors, 1u);
  EXPECT_EQ(s[0].max_queued_bytes, 3000u);
  EXPECT_EQ(s[1].from, "sw-c");
  EXPECT_TRUE(parse_delay_line_stats("").empty());
  EXPECT_TRUE(parse_delay_line_stats("{\"directions\":[1]}").empty());
}

}  // namespace
}  // namespace cp::lab
