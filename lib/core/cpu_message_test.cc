#include "core/cpu_message.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/error.h"

namespace cp::msg {
namespace {

TEST(CpuMessage, RoundTripsEveryField) {
  CpuSummary s;
  s.seconds = 1.5;
  s.core_busy_pct = {90, 10};
  s.core_busy_max_pct = {99, 20};
  s.total_busy_pct = 50;
  s.sys_pct = 30;
  s.softirq_pct = 12;
  s.agent_pct = 95;
  s.server_pct = 3;
  s.kernel_pct = 1;
  s.other_pct = 0.5;
  ProcLoad p;
  p.pid = 42;
  p.comm = "smbd";
  p.cpu_pct = 120;
  p.cpu_limit_pct = 20;
  p.other_netns = true;
  p.role = "server";
  p.top_thread_pct = 98;
  p.threads = 3;
  s.top.push_back(p);
  s.server_pid = 4242;

  const CpuSummary back =
      cpu_summary_from_json(boost::json::parse(boost::json::serialize(to_json(s))));
  EXPECT_DOUBLE_EQ(back.seconds, 1.5);
  EXPECT_EQ(back.core_busy_pct, s.core_busy_pct);
  EXPECT_EQ(back.core_busy_max_pct, s.core_busy_max_pct);
  EXPECT_DOUBLE_EQ(back.sys_pct, 30);
  EXPECT_DOUBLE_EQ(back.softirq_pct, 12);
  EXPECT_DOUBLE_EQ(back.agent_pct, 95);
  EXPECT_DOUBLE_EQ(back.other_pct, 0.5);
  ASSERT_EQ(back.top.size(), 1u);
  EXPECT_EQ(back.top[0].pid, 42);
  EXPECT_EQ(back.top[0].comm, "smbd");
  EXPECT_EQ(back.top[0].role, "server");
  EXPECT_TRUE(back.top[0].other_netns);
  EXPECT_DOUBLE_EQ(back.top[0].top_thread_pct, 98);
  EXPECT_EQ(back.top[0].threads, 3);
  EXPECT_EQ(back.server_pid, 4242);
  // Unknown (0) is left out of the JSON.
  EXPECT_FALSE(to_json(CpuSummary{}).as_object().contains("server_pid"));
}

TEST(CpuMessage, OlderRecordsKeepDefaults) {
  // What agents before per-thread accounting stored.
  const CpuSummary s = cpu_summary_from_json(boost::json::parse(
      R"({"seconds":0.7,"core_busy_pct":[50],"total_busy_pct":50,
          "top":[{"pid":1,"comm":"x","cpu_pct":5,"cpu_limit_pct":0,"other_netns":false}]})"));
  EXPECT_DOUBLE_EQ(s.seconds, 0.7);
  ASSERT_EQ(s.top.size(), 1u);
  EXPECT_EQ(s.top[0].role, "");
  EXPECT_DOUBLE_EQ(s.top[0].top_thread_pct, -1);  // unknown, not zero
  EXPECT_EQ(s.server_pid, 0);                     // unknown
  EXPECT_TRUE(cpu_summary_from_json(boost::json::value(3)).top.empty());
}

TEST(SecurityCpuMessage, APeersSummaryIsCheckedFieldByField) {
  const boost::json::value good = to_json(CpuSummary{});
  EXPECT_NO_THROW(cpu_summary_from_peer(good, "cpu_stop"));
  struct Case {
    const char* text;
    const char* field;
  };
  for (const Case& c :
       {Case{R"({"total_busy_pct":1,"top":[]})", "'seconds'"},
        Case{R"({"seconds":"1","total_busy_pct":1,"top":[]})", "'seconds'"},
        Case{R"({"seconds":1,"total_busy_pct":1,"top":[{"pid":1,"comm":5}]})", "'top[0].comm'"},
        Case{R"({"seconds":1,"total_busy_pct":1,"top":[],"core_busy_pct":["x"]})",
             "'core_busy_pct'"}}) {
    SCOPED_TRACE(c.text);
    try {
      cpu_summary_from_peer(boost::json::parse(c.text), "cpu_stop");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer);
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
    }
  }
  // A pid far out of int's range (undefined to cast) reads clamped.
  const CpuSummary big =
      cpu_summary_from_json(boost::json::parse(R"({"top":[{"pid":1e300,"threads":-5}]})"));
  ASSERT_EQ(big.top.size(), 1u);
  EXPECT_GT(big.top[0].pid, 0);
  EXPECT_EQ(big.top[0].threads, 0);
}

}  // namespace
}  // namespace cp::msg
