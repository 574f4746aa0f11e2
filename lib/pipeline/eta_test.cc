#include "pipeline/eta.h"

#include <gtest/gtest.h>

namespace cp::pipeline {
namespace {

Plan two_share_plan() {
  Plan p;
  p.disk_sizes = {10'000'000};
  p.disk_count = 2;  // 4 samples per end, and the server's 2 synchronous writes
  p.disk_settle = 0;
  p.tcp_seconds = 2;
  p.tcp_count = 3;
  p.proto_sizes = {100'000'000};
  p.proto_count = 5;  // 10 samples per share
  p.proto_budget = 0;
  SharePlan disk_share, ram_share;
  disk_share.name = "smb-disk";
  disk_share.medium = "disk";
  ram_share.name = "smb-ram";
  ram_share.medium = "ram";
  p.shares = {disk_share, ram_share};  // declared disk first: run RAM first
  p.files_enabled = false;             // FilesStagesComeAfterTheDiskStages turns it on
  return p;
}

Progress done(uint64_t bytes, double seconds) { return {"x", 1, 1, bytes, seconds, true}; }

TEST(RunEta, CountsStagesInTheRunnersOrder) {
  RunEta eta(two_share_plan());
  EXPECT_EQ(eta.stage_count(), 6);  // disk x2, tcp x2, two shares
  EXPECT_EQ(eta.stage_no(), 0);
  for (int i = 0; i < 5; ++i) eta.stage_begun();
  EXPECT_EQ(eta.stage_no(), 5);
  EXPECT_EQ(eta.stage_name(), "smb-ram");  // RAM shares before disk shares
  eta.stage_begun();
  eta.stage_begun();  // more begins than stages: stays on the last
  EXPECT_EQ(eta.stage_no(), 6);
  EXPECT_EQ(eta.stage_name(), "smb-disk");
}

TEST(RunEta, FilesStagesComeAfterTheDiskStagesAndTakeWhatTheirPhasesTook) {
  Plan p = two_share_plan();
  p.files_enabled = true;  // order both: 8 phases per end
  p.tcp_enabled = p.proto_enabled = false;
  RunEta eta(p);
  EXPECT_EQ(eta.stage_count(), 4);  // disk x2, files x2
  eta.stage_begun();
  eta.stage_begun();
  eta.stage_begun();
  EXPECT_EQ(eta.stage_name(), "files server");
  eta.sample_done(done(4'096'000, 0.5));
  // 7 phases left on the server and 8 on the client at 0.5 s each.
  EXPECT_NEAR(eta.remaining_s(Progress{}), 15 * 0.5, 1e-6);
}

TEST(RunEta, UnknownUntilARateIsMeasuredThenFromTheRates) {
  RunEta eta(two_share_plan());
  eta.stage_begun();
  EXPECT_LT(eta.remaining_s(Progress{}), 0);
  // Disk at 100 MB/s: 10 MB files take 0.1 s each.
  eta.sample_done(done(10'000'000, 0.1));
  const double t = eta.remaining_s(Progress{});
  // 9 disk samples left at 0.1 s (the server's 2 synchronous writes too), 6
  // TCP samples at 2 s, 20 protocol samples of 100 MB at the disk's rate
  // (nothing faster known yet): 1 s each; plus each sample's overhead.
  const double want = 9 * 0.1 + 6 * 2 + 20 * 1.0 + 35 * 0.2;
  EXPECT_NEAR(t, want, 1e-6);
  // The sample under way has spent 0.05 s of its 0.1 s.
  Progress live{"x", 2, 4, 5'000'000, 0.05, false};
  EXPECT_NEAR(eta.remaining_s(live), want - 0.05, 1e-6);
}

TEST(RunEta, AProtocolBudgetCapsEachSeries) {
  Plan p = two_share_plan();
  p.disk_enabled = false;
  p.tcp_enabled = false;
  p.proto_budget = 3;  // s per size and direction
  RunEta eta(p);
  eta.stage_begun();
  // 10 MB/s: a 100 MB file takes 10 s, past the budget after one sample.
  eta.sample_done(done(100'000'000, 10));
  // Each share has 2 series (read, write); this one's first series is still
  // open: at most budget + one file per series left.
  const double t = eta.remaining_s(Progress{});
  EXPECT_NEAR(t, 4 * (3 + 10), 1e-6);
}

TEST(RunEta, FormatsMinutesAndHours) {
  EXPECT_EQ(format_eta(35.4), "35 s");
  EXPECT_EQ(format_eta(250), "4 min 10 s");
  EXPECT_EQ(format_eta(3900), "1 h 05 min");
  EXPECT_EQ(format_eta(-1), "");
}

}  // namespace
}  // namespace cp::pipeline
