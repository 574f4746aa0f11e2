#include "core/stored_run.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/cpu_message.h"
#include "core/messages_json.h"
#include "core/stored_run_json.h"

namespace cp::stored {
namespace {

namespace json = boost::json;

StageRecord stage(const std::string& layer, const std::string& where, const std::string& details,
                  const std::string& op = "read") {
  StageRecord st;
  st.layer = layer;
  st.where = where;
  SampleRecord s;
  s.op = op;
  s.details_json = details;
  st.samples.push_back(s);
  return st;
}

// Reports read a host's stored facts through their codec: a run from before a
// field reads it as unknown, a column that holds no JSON object as no facts.
TEST(StoredRun, FactsAreDecodedThroughTheirCodecAndDamagedFactsAreNone) {
  RunRecord r;
  r.hosts.push_back({"server", "nas", R"({"hostname":"nas","os":null,"net":{"mtu":9000}})"});
  for (const char* damaged : {"", "{not json", "[1,2]"})
    r.hosts.push_back({"client", "c", damaged});
  const stored::Run run = decode(r);
  const std::optional<msg::Facts>& f = run.hosts[0].facts;
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->hostname, "nas");
  EXPECT_FALSE(f->os.has_value());
  EXPECT_FALSE(f->euid.has_value());
  ASSERT_TRUE(f->net.has_value());
  EXPECT_EQ(f->net->mtu, 9000);
  EXPECT_FALSE(f->net->speed_mbit.has_value());
  for (size_t i = 1; i < run.hosts.size(); ++i) EXPECT_FALSE(run.hosts[i].facts.has_value()) << i;
  EXPECT_EQ(run.host("server"), &run.hosts[0]);
  EXPECT_EQ(run.host("nobody"), nullptr);
}

TEST(StoredRun, EachStageKindHasItsDetailsTypeAndPlace) {
  RunRecord r;
  r.stages.push_back(stage("disk", "client", R"({"file":"f1","cache_reason":"zfs arc"})"));
  r.stages.push_back(stage("tcp", "server->client",
                           R"({"sender":"server","tcp_info":{"available":true,"rtt_us":40}})",
                           "send"));
  r.stages.push_back(stage("smb", "ram", R"({"file":"p","properties":{"dialect":"3.1.1"}})"));
  StageRecord sweep = stage("nfs", "disk", R"({"share":"s","pattern":"randread","request":4096})",
                            "sweep-randread");
  r.stages.push_back(sweep);
  r.stages.push_back(stage("ftp", "tape", ""));
  const stored::Run run = decode(r);
  ASSERT_EQ(run.stages.size(), 5u);
  EXPECT_EQ(run.stages[0].kind, StageKind::kDisk);
  EXPECT_EQ(run.stages[0].place, Place::kClient);
  ASSERT_NE(run.stages[0].samples[0].details.as<msg::DiskDetails>(), nullptr);
  EXPECT_EQ(run.stages[0].samples[0].details.as<msg::DiskDetails>()->cache_reason, "zfs arc");
  EXPECT_EQ(run.stages[1].kind, StageKind::kTcp);
  EXPECT_EQ(run.stages[1].place, Place::kServerToClient);
  const auto* tcp = run.stages[1].samples[0].details.as<msg::TcpDetails>();
  ASSERT_NE(tcp, nullptr);
  EXPECT_TRUE(tcp->tcp_info.available);
  EXPECT_EQ(tcp->tcp_info.rtt_us, 40u);
  EXPECT_EQ(run.stages[2].kind, StageKind::kProtocol);
  EXPECT_EQ(run.stages[2].driver, "smb");
  EXPECT_EQ(run.stages[2].place, Place::kRam);
  const auto* td = run.stages[2].samples[0].details.as<msg::TransferDetails>();
  ASSERT_NE(td, nullptr);
  EXPECT_EQ(td->properties.at("dialect"), "3.1.1");
  EXPECT_EQ(run.stages[3].kind, StageKind::kSizeScan);
  EXPECT_EQ(run.stages[3].place, Place::kDisk);
  ASSERT_NE(run.stages[3].samples[0].details.as<msg::SizeScanDetails>(), nullptr);
  EXPECT_EQ(run.stages[3].samples[0].details.as<msg::SizeScanDetails>()->request, 4096u);
  // A place this build does not know keeps its text; no details, no struct.
  EXPECT_EQ(run.stages[4].place, Place::kOther);
  EXPECT_EQ(run.stages[4].where, "tape");
  EXPECT_TRUE(run.stages[4].samples[0].details.empty());
  EXPECT_TRUE(to_json(run.stages[4].samples[0].details).is_null());
}

// What the pipeline stores (each kind's codec, the stall flag after it) reads
// back to the same text: show --json and export print what was stored.
TEST(StoredRun, DetailsAndCpuTheRunnerStoredEncodeBackToTheSameText) {
  msg::TransferDetails t{"f.dat", "smb-ram", "abc", {{"io_size", "1048576"}}, "tmpfs", "", ""};
  json::object details = msg::to_json(t);
  details["stalled"] = true;
  details["silent_seconds"] = 7.25;
  msg::CpuSummary c;
  c.seconds = 1.5;
  c.core_busy_pct = {12.5, 99};
  c.top.push_back({42, "smbd", 55.5, 0, false, "server", 50, 3, 1.25, -1});
  json::object cpu{{"server", msg::to_json(c)}, {"client", msg::to_json(msg::CpuSummary{})}};
  RunRecord r;
  StageRecord st = stage("smb", "ram", json::serialize(details));
  st.samples[0].cpu_json = json::serialize(cpu);
  r.stages.push_back(st);
  const stored::Run run = decode(r);
  const Sample& s = run.stages[0].samples[0];
  EXPECT_TRUE(s.details.stalled);
  EXPECT_EQ(s.details.silent_seconds, 7.25);
  EXPECT_EQ(json::serialize(to_json(s.details)), json::serialize(details));
  ASSERT_TRUE(s.cpu.has_value());
  ASSERT_EQ(s.cpu->size(), 2u);
  EXPECT_EQ((*s.cpu)[0].role, "server");  // stored order
  ASSERT_NE(s.cpu_of("server"), nullptr);
  EXPECT_EQ(s.cpu_of("server")->top.at(0).comm, "smbd");
  EXPECT_EQ(s.cpu_of("nobody"), nullptr);
  EXPECT_EQ(json::serialize(to_json(s.cpu)), json::serialize(cpu));
}

TEST(StoredRun, ThePlansLinkSpeedIsReadOnceAndADamagedPlanIsNull) {
  RunRecord r;
  r.plan_json = R"({"link":{"nominal_bits":1e9},"tcp":{"count":5}})";
  const stored::Run run = decode(r);
  EXPECT_EQ(run.planned_link_bits, 1e9);
  EXPECT_EQ(run.plan.value().at("tcp").at("count").as_int64(), 5);
  r.plan_json = "{damaged";
  EXPECT_TRUE(decode(r).plan.value().is_null());
  EXPECT_EQ(decode(r).planned_link_bits, 0);
}

TEST(StoredRun, SanitizedRunEscapesWhatAHostChoseInFactsDetailsAndProcessNames) {
  RunRecord r;
  r.label = "a\x1b[31mred";
  r.hosts.push_back({"server", "nas", R"({"hostname":"evil\u001b[2J"})"});
  StageRecord st = stage("disk", "server", R"({"file":"f\u001b]0;x\u0007"})");
  msg::CpuSummary c;
  c.top.push_back({1, "bad\x1b[1m", 1, 0, false, "other", -1, 1, 0, -1});
  st.samples[0].cpu_json = json::serialize(json::object{{"server", msg::to_json(c)}});
  r.stages.push_back(st);
  const stored::Run safe = sanitized(decode(r));
  auto clean = [](const std::string& s) { return s.find('\x1b') == std::string::npos; };
  EXPECT_TRUE(clean(safe.label)) << safe.label;
  EXPECT_TRUE(clean(*safe.hosts[0].facts->hostname)) << *safe.hosts[0].facts->hostname;
  EXPECT_TRUE(clean(safe.stages[0].samples[0].details.as<msg::DiskDetails>()->file));
  EXPECT_TRUE(clean(safe.stages[0].samples[0].cpu_of("server")->top.at(0).comm));
}

}  // namespace
}  // namespace cp::stored
