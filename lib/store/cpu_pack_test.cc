#include "store/cpu_pack.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/cpu_message.h"
#include "core/error.h"

namespace cp::store {
namespace {

namespace json = boost::json;

msg::CpuSummary summary(double seed) {
  msg::CpuSummary s;
  s.seconds = 0.16570573999979388 * seed;
  s.core_busy_pct = {100, 37.123456789};
  s.core_busy_max_pct = {100, 61.98765};
  s.total_busy_pct = 68.5;
  s.sys_pct = 14.634146341463415;
  s.agent_pct = 19.51219512195122;
  s.server_pct = 2.9841645799392045;
  s.other_pct = 226.56810126509473;
  s.own_wait_pct = 116.0392337647683;
  msg::ProcLoad p;
  p.pid = 3851;
  p.comm = "cc1plus";
  p.cpu_pct = 26.86065612455873 * seed;
  p.other_netns = true;
  p.role = "other";
  p.top_thread_pct = 26.86065612455873;
  p.threads = 1;
  p.wait_pct = 102.67540158850964;
  s.top.push_back(p);
  p.pid = 3727;
  p.comm = "chokepoint-agen";
  p.role = "agent";
  p.other_netns = false;
  p.cpu_limit_pct = 20;
  p.throttled_pct = 12.5;
  p.threads = 2;
  s.top.push_back(p);
  if (seed > 3) s.server_pid = 2718;  // the file server instance the sample's connection had
  return s;
}

std::string cpu_json(double seed) {
  json::object o;
  o["client"] = msg::to_json(summary(seed));
  o["server"] = msg::to_json(summary(seed * 2));
  return json::serialize(o);
}

TEST(CpuPack, GivesBackTheVeryTextItPacked) {
  ProcTable procs;
  for (double seed : {1.0, 1.5, 3.25}) {
    const std::string text = cpu_json(seed);
    const auto packed = pack_cpu(text, procs);
    ASSERT_TRUE(packed.has_value()) << text;
    EXPECT_LT(packed->size() * 3, text.size()) << *packed;  // at least 3 times smaller
    EXPECT_EQ(unpack_cpu(*packed, procs), text);
  }
  // The two processes are stored once, however many samples name them.
  EXPECT_EQ(procs.fresh().size(), 2u);
}

// A record packed before server_pid (nine numbers in its first section)
// reads back with the instance unknown.
TEST(CpuPack, ARecordPackedBeforeTheServerPidReadsItAsUnknown) {
  ProcTable procs;
  json::object o;
  o["server"] = msg::to_json(summary(1));
  const auto packed = pack_cpu(json::serialize(o), procs);
  ASSERT_TRUE(packed);
  // The first section's last number is server_pid (0 here): drop it.
  std::string old = *packed;
  const size_t bar = old.find('|');
  ASSERT_NE(bar, std::string::npos);
  const size_t comma = old.rfind(',', bar);
  ASSERT_EQ(old.substr(comma, bar - comma), ",0") << old;
  old.erase(comma, bar - comma);
  EXPECT_EQ(unpack_cpu(old, procs), json::serialize(o));
}

TEST(CpuPack, LeavesAnyOtherShapeWhole) {
  ProcTable procs;
  // Fields the codec does not write, an end it does not know, not JSON.
  EXPECT_FALSE(pack_cpu(R"({"server":{"seconds":1,"top":[]}})", procs));
  EXPECT_FALSE(pack_cpu(R"({"nas":)" + json::serialize(msg::to_json(summary(1))) + "}", procs));
  EXPECT_FALSE(pack_cpu("not json", procs));
  EXPECT_TRUE(procs.fresh().empty());  // nothing interned for what was not packed
}

TEST(CpuPack, ADamagedPackedTextIsAnIoError) {
  ProcTable procs;
  const auto packed = pack_cpu(cpu_json(1), procs);
  ASSERT_TRUE(packed);
  ProcTable empty;
  try {
    unpack_cpu(*packed, empty);  // names processes this table lacks
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
  EXPECT_THROW(unpack_cpu("Sx|1|2|", procs), Error);
}

TEST(SplitProps, CutsATrailingPropertiesObjectExactly) {
  const std::string d =
      R"({"file":"smb-ram-read-1.dat","share":"smb-ram","properties":{"dialect":"SMB3_11","io_size":"1048576"}})";
  const auto split = split_props(d);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->props, R"({"dialect":"SMB3_11","io_size":"1048576"})");
  EXPECT_EQ(join_props(split->rest, split->props), d);
  const auto only = split_props(R"({"properties":{}})");
  ASSERT_TRUE(only);
  EXPECT_EQ(join_props(only->rest, only->props), R"({"properties":{}})");
  // Not last, not an object, spaced differently: left whole.
  EXPECT_FALSE(split_props(R"({"properties":{},"file":"x"})"));
  EXPECT_FALSE(split_props(R"({"file":"x","properties":"y"})"));
  EXPECT_FALSE(split_props(R"({"file": "x","properties":{}})"));
}

}  // namespace
}  // namespace cp::store
