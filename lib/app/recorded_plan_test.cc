// A lab throttle is recorded with the run, so compare names it.
#include "app/recorded_plan.h"

#include <gtest/gtest.h>

#include "analysis/compare.h"
#include "report/test_runs.h"

namespace cp::app {
namespace {

TEST(RecordedPlan, CompareNamesALabThrottleBetweenRuns) {
  RunRecord a = report::testing::seed_run(1, "before");
  RunRecord b = report::testing::seed_run(2, "after");
  lab::LabThrottle none, starved;
  starved.smbd_cpu = 0.2;
  a.plan_json = with_lab_throttle(a.plan_json, none);
  b.plan_json = with_lab_throttle(b.plan_json, starved);
  const analysis::Comparison c = analysis::compare_runs(stored::decode(a), stored::decode(b));
  bool named = false;
  for (const auto& d : c.env) {
    if (d.where == "plan" && d.what.find("lab_throttle") != std::string::npos &&
        d.what.find("smbd_cpu") != std::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace cp::app
