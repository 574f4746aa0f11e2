// A finished run's status and exit code from its stages and samples.
#include "app/run_status.h"

#include <gtest/gtest.h>

#include "report/test_runs.h"

namespace cp::app {
namespace {

using report::testing::seed_run;
using report::testing::SeedRun;

RunOutcome outcome(const RunRecord& run) {
  return outcome_of(stored::decode(run), analysis::analyze(stored::decode(run)));
}

// A stage that failed with `error` and stored no sample.
StageRecord failed_stage(const std::string& layer, const std::string& where,
                         const std::string& error) {
  StageRecord st;
  st.layer = layer;
  st.where = where;
  st.status = kFailed;
  st.error = error;
  return st;
}

TEST(RunOutcome, EveryStageAndSampleGoodIsComplete) {
  RunOutcome o = outcome(seed_run());
  EXPECT_EQ(o.status, kComplete);
  EXPECT_EQ(exit_code_for(o.status), kExitComplete);
}

TEST(RunOutcome, AFailedProtocolStageWithAVerdictLeftIsPartial) {
  RunRecord run = seed_run();
  run.stages.push_back(failed_stage("ftp", "disk", "client: FTP login refused (530)"));
  RunOutcome o = outcome(run);
  EXPECT_EQ(o.status, kPartial);
  EXPECT_EQ(exit_code_for(o.status), kExitPartial);
}

TEST(RunOutcome, AFailedSampleInACompleteStageIsPartial) {
  RunRecord run = seed_run();
  run.stages[4].samples[2].error = "stalled: the client agent said nothing for 60.2 s";
  EXPECT_EQ(outcome(run).status, kPartial);
}

TEST(RunOutcome, NoSampleAnywhereIsFailed) {
  RunRecord run = SeedRun(1, "x").build();
  run.stages.push_back(failed_stage("disk", "server", "not enough space"));
  RunOutcome o = outcome(run);
  EXPECT_EQ(o.status, kFailed);
  EXPECT_EQ(exit_code_for(o.status), kExitFailed);
}

// A plan of the small-file stage alone: its rows (ops/s) are figures no verdict
// judges yet, and the run measured what it was asked to.
TEST(RunOutcome, OnlyTheSmallFileStageIsCompleteWithoutAVerdict) {
  RunRecord run = SeedRun(1, "x").build();
  StageRecord st;
  st.layer = "files";
  st.where = "server";
  st.status = kComplete;
  SampleRecord s;
  s.op = "files-create";
  s.size = 4096;
  s.bytes = 4096000;
  s.seconds = 0.5;
  s.details_json = R"({"count":1000,"ops":1000,"order":"sequential"})";
  st.samples.push_back(s);
  run.stages.push_back(st);
  RunOutcome o = outcome(run);
  EXPECT_EQ(o.status, kComplete);
  run.stages[0].samples[0].error = "cannot create: No space left on device";
  run.stages[0].status = kFailed;
  EXPECT_EQ(outcome(run).status, kFailed);  // nothing measured after all
}

TEST(RunOutcome, OnlyNotesAndNoPathIsNoVerdict) {
  // Every sample of the only stage failed: the analysis can only note errors.
  RunRecord run = SeedRun(1, "x").stage("disk", "server", "read", 100'000'000, {70, 71}).build();
  for (auto& s : run.stages[0].samples) s.error = "disk full";
  run.stages[0].status = kFailed;
  EXPECT_FALSE(analysis::analyze(stored::decode(run)).has_verdict());
  EXPECT_EQ(outcome(run).status, kFailed);
}

TEST(ExitCode, InterruptedIs130) { EXPECT_EQ(exit_code_for(kInterrupted), 130); }

}  // namespace
}  // namespace cp::app
