#include "pipeline/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/text.h"
#include "transfer/driver.h"

namespace cp::pipeline {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_plan(text, "plan.ini");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    return describe(e);
  }
  return "";
}

// For each {plan text, what its error says}: parsing the text fails with an
// error that says it.
void expect_errors_say(
    std::initializer_list<std::pair<const char*, const char*>> plans_and_errors) {
  for (const auto& [text, says] : plans_and_errors)
    EXPECT_NE(error_of(text).find(says), std::string::npos) << text << " -> " << error_of(text);
}

TEST(Plan, DefaultsFollowTheHandMethod) {
  Plan p = parse_plan("", "empty");
  EXPECT_EQ(p.disk_sizes, (std::vector<uint64_t>{10'000'000, 100'000'000}));
  EXPECT_EQ(p.disk_count, 10);
  EXPECT_EQ(p.disk_block, 1u << 20);
  EXPECT_GE(p.tcp_seconds, 2.0);
}

TEST(Plan, ParsesEverySection) {
  Plan p = parse_plan(R"(# a comment
[server]
ram_dir = /mnt/ram   # trailing comment
disk_dir = /srv/data
[client]
disk_dir = /home/me/tmp
[disk]
sizes = 4MiB, 1GB
count = 3
block = 256k
[tcp]
seconds = 2500ms
count = 4
buffer = 1MiB
data_address = 10.0.0.5
[link]
nominal = 10gbit
)",
                      "plan.ini");
  EXPECT_EQ(p.server.ram_dir, "/mnt/ram");
  EXPECT_EQ(p.server.disk_dir, "/srv/data");
  EXPECT_EQ(p.client.ram_dir, "/dev/shm");
  EXPECT_EQ(p.client.disk_dir, "/home/me/tmp");
  EXPECT_EQ(p.disk_sizes, (std::vector<uint64_t>{4u << 20, 1'000'000'000}));
  EXPECT_EQ(p.disk_count, 3);
  EXPECT_EQ(p.disk_block, 256u << 10);
  EXPECT_DOUBLE_EQ(p.tcp_seconds, 2.5);
  EXPECT_EQ(p.tcp_count, 4);
  EXPECT_EQ(p.tcp_buffer, 1u << 20);
  EXPECT_EQ(p.data_address, "10.0.0.5");
  EXPECT_EQ(p.link_bits, 10'000'000'000u);
}

TEST(Plan, BaseIsOverriddenOnlyWhereSet) {
  Plan base;
  base.server.ram_dir = "/lab/ram";
  base.data_address = "198.18.0.1";
  Plan p = parse_plan("[disk]\ncount = 2\n", "p", base);
  EXPECT_EQ(p.server.ram_dir, "/lab/ram");
  EXPECT_EQ(p.data_address, "198.18.0.1");
  EXPECT_EQ(p.disk_count, 2);
}

// A share on the server's disk, in /volume1/data.
constexpr const char* kDiskShare =
    "[share b]\nurl = smb://nas/data\nserver_dir = /volume1/data\nmedium = disk\n";

TEST(Plan, ServerDiskDirDefaultsToTheDiskSharesDirectory) {
  Plan p = parse_plan("[share a]\nurl = ftp://nas/ram\nserver_dir = /dev/shm/a\nmedium = ram\n" +
                          std::string(kDiskShare),
                      "plan.ini");
  EXPECT_FALSE(settle_server_disk_dir(p).empty());
  EXPECT_EQ(p.server.disk_dir, "/volume1/data");
  EXPECT_EQ(p.client.disk_dir, "/var/tmp");  // the client has no share to follow
}

TEST(Plan, ServerDiskDirGivenInThePlanIsKept) {
  Plan p = parse_plan("[server]\ndisk_dir = /srv/test\n" + std::string(kDiskShare), "plan.ini");
  EXPECT_TRUE(settle_server_disk_dir(p).empty());
  EXPECT_EQ(p.server.disk_dir, "/srv/test");
}

TEST(Plan, ServerDiskDirWithoutADiskShareStaysTheDefault) {
  Plan p = parse_plan("[share a]\nurl = ftp://nas/ram\nserver_dir = /dev/shm/a\nmedium = ram\n",
                      "plan.ini");
  EXPECT_TRUE(settle_server_disk_dir(p).empty());
  EXPECT_EQ(p.server.disk_dir, "/var/tmp");
}

// At 1.25 MB/s (10 Mbit/s) three 100 MB transfers take 240 s, over the 30 s
// budget; three of 10 MB take 24 s.
TEST(Plan, BudgetLeavesOutSizesThatDoNotFitAtTheTcpRate) {
  Plan p = parse_plan("", "plan.ini");
  std::vector<uint64_t> dropped;
  EXPECT_EQ(budgeted_proto_sizes(p, 1.25e6, &dropped), std::vector<uint64_t>{10'000'000});
  EXPECT_EQ(dropped, std::vector<uint64_t>{100'000'000});
  dropped.clear();
  EXPECT_EQ(budgeted_proto_sizes(p, 117e6, &dropped), p.proto_sizes);
  EXPECT_TRUE(dropped.empty());
  // No TCP figure: nothing to predict from.
  EXPECT_EQ(budgeted_proto_sizes(p, 0, &dropped), p.proto_sizes);
}

TEST(Plan, BudgetKeepsTheSmallestSizeHoweverSlow) {
  Plan p = parse_plan("", "plan.ini");
  EXPECT_EQ(budgeted_proto_sizes(p, 1e3, nullptr), std::vector<uint64_t>{10'000'000});
}

TEST(Plan, SizesTheUserSetAreKeptUnlessABudgetIsSetToo) {
  Plan p = parse_plan("[protocol]\nsizes = 10MB, 1GB\n", "plan.ini");
  EXPECT_EQ(budgeted_proto_sizes(p, 1.25e6, nullptr), p.proto_sizes);
  Plan q = parse_plan("[protocol]\nsizes = 10MB, 1GB\nbudget = 60s\n", "plan.ini");
  EXPECT_EQ(budgeted_proto_sizes(q, 1.25e6, nullptr), std::vector<uint64_t>{10'000'000});
  Plan off = parse_plan("[protocol]\nbudget = 0\n", "plan.ini");
  EXPECT_EQ(budgeted_proto_sizes(off, 1.25e6, nullptr), off.proto_sizes);
}

TEST(Plan, SeriesStopsAtTheBudgetAfterTheMinimumSamples) {
  Plan p = parse_plan("", "plan.ini");
  EXPECT_FALSE(proto_series_done(p, kMinProtoSamples - 1, 1000));
  EXPECT_TRUE(proto_series_done(p, kMinProtoSamples, p.proto_budget));
  EXPECT_FALSE(proto_series_done(p, kMinProtoSamples, p.proto_budget / 2));
  // A count the plan sets is honoured unless the plan sets a budget too.
  Plan counted = parse_plan("[protocol]\ncount = 10\n", "plan.ini");
  EXPECT_FALSE(proto_series_done(counted, 5, 1000));
  Plan both = parse_plan("[protocol]\ncount = 10\nbudget = 5s\n", "plan.ini");
  EXPECT_TRUE(proto_series_done(both, 5, 6));
}

TEST(Plan, TcpStreamsAreAutoByDefaultOrACountFromOneToSixteen) {
  EXPECT_EQ(parse_plan("", "plan.ini").tcp_streams, kAutoTcpStreams);
  EXPECT_EQ(parse_plan("[tcp]\nstreams = auto\n", "plan.ini").tcp_streams, kAutoTcpStreams);
  EXPECT_EQ(parse_plan("[tcp]\nstreams = 4\n", "plan.ini").tcp_streams, 4);
  EXPECT_EQ(parse_plan("[tcp]\nstreams = 1\n", "plan.ini").tcp_streams, 1);
  EXPECT_THROW(parse_plan("[tcp]\nstreams = 0\n", "plan.ini"), Error);
  EXPECT_THROW(parse_plan("[tcp]\nstreams = 17\n", "plan.ini"), Error);
  EXPECT_THROW(parse_plan("[tcp]\nstreams = many\n", "plan.ini"), Error);
}

TEST(Plan, ErrorsNameLineAndKey) {
  expect_errors_say({
      {"[disk]\n\nsizez = 1MB\n", "plan.ini:3: unknown key 'sizez' in [disk]"},
      {"[disk]\nsizez = 1MB\n", "[disk] takes: block, count, enabled, settle, sizes"},
      {"[disks]\n", "plan.ini:1: unknown section [disks]"},
      {"count = 3\n", "before any [section]"},
      {"[disk]\ncount three\n", "expected 'key = value'"},
      {"[disk]\ncount = 0\n", "plan.ini:2: disk.count"},
      {"[disk]\nblock = 1000\n", "multiple of 4 KiB"},
      {"[tcp]\nseconds = fast\n", "plan.ini:2: tcp.seconds"},
      {"[server]\nram_dir = relative/dir\n", "not an absolute path"},
      {"[disk]\ncount = 2\ncount = 3\n", "set twice"},
      {"[link]\nnominal = 1GB\n", "unknown rate unit"},
      {"[disk\n", "lacks ']'"},
  });
}

TEST(Plan, Shares) {
  Plan p = parse_plan(R"([protocol]
sizes = 1MB
count = 3
[share smb-ram]
url = smb://nas/ram
server_dir = /srv/ram
medium = ram
user = me
password_env = NAS_PW
options = connections=8, encrypt=require
[share ftp-disk]
url = ftp://nas/disk
server_dir = /srv/disk
medium = disk
password_file = /home/me/.nas-pw
)",
                      "plan.ini");
  ASSERT_EQ(p.shares.size(), 2u);
  EXPECT_EQ(p.shares[0].name, "smb-ram");
  EXPECT_EQ(p.shares[0].driver, "smb");
  EXPECT_EQ(p.shares[0].medium, "ram");
  EXPECT_EQ(p.shares[0].options,
            (std::map<std::string, std::string>{{"connections", "8"}, {"encrypt", "require"}}));
  EXPECT_EQ(p.shares[0].declared_at, "plan.ini:4");
  EXPECT_EQ(p.shares[1].driver, "ftp");
  EXPECT_EQ(p.shares[1].password_file, "/home/me/.nas-pw");
  EXPECT_EQ(p.proto_sizes, (std::vector<uint64_t>{1'000'000}));
  EXPECT_EQ(p.proto_count, 3);
  EXPECT_NO_THROW(validate(p));
  std::string j = plan_to_json(p);
  EXPECT_NE(j.find("NAS_PW"), std::string::npos);  // the source, not a secret
}

TEST(Plan, ShareErrors) {
  expect_errors_say({
      {"[share a]\nurl = gopher://x\n", "plan.ini:2: share a.url"},
      {"[share a]\npassword = hunter2\n", "passwords do not go in the plan"},
      {"[share a]\n[share a]\n", "declared twice"},
      {"[share]\n", "needs a name"},
      {"[share a/b]\n", "not a plain name"},
      {"[share a]\nmedium = floppy\n", "not ram or disk"},
      {"[share a]\nfoo = 1\n", "[share a] takes:"},
  });
  auto invalid = [](const std::string& text) {
    try {
      validate(parse_plan(text, "p"));
    } catch (const Error& e) {
      return describe(e);
    }
    return std::string();
  };
  EXPECT_NE(invalid("[share a]\nurl = smb://h/s\nmedium = ram\n").find("has no server_dir"),
            std::string::npos);
  EXPECT_NE(invalid("[share a]\nurl = smb://h/s\nserver_dir = /s\n").find("has no medium"),
            std::string::npos);
  EXPECT_NE(invalid("[share a]\nurl = smb://h/s\nserver_dir = /s\nmedium = ram\n"
                    "[share b]\nurl = smb://h/t\nserver_dir = /t\nmedium = ram\n")
                .find("both smb over ram"),
            std::string::npos);
  EXPECT_NE(invalid("[share a]\nurl = smb://h/s\nserver_dir = /s\nmedium = ram\n"
                    "password_env = X\npassword_prompt = yes\n")
                .find("more than one password source"),
            std::string::npos);
}

TEST(Plan, ShareFlag) {
  Plan p;
  add_share_flag(p,
                 "nas=smb://nas/ram,server_dir=/srv/"
                 "ram,medium=ram,user=me,options=connections=4,workgroup=LAB");
  ASSERT_EQ(p.shares.size(), 1u);
  const auto& nas = p.shares[0];
  EXPECT_EQ(nas.url, "smb://nas/ram");
  EXPECT_EQ(nas.server_dir, "/srv/ram");
  EXPECT_EQ(nas.user, "me");
  EXPECT_EQ(nas.options,
            (std::map<std::string, std::string>{{"connections", "4"}, {"workgroup", "LAB"}}));
  EXPECT_THROW(add_share_flag(p, "nas=smb://other/x"), Error);
  EXPECT_THROW(add_share_flag(p, "no-url"), Error);
  EXPECT_THROW(add_share_flag(p, "b=smb://h/s,password=secret"), Error);
}

// The error a plan text (or a --share flag) causes, with its kind and key.
struct KeyedError {
  ErrorKind kind = ErrorKind::kUsage;
  std::string key, what, hint;
  bool thrown = false;
};
KeyedError keyed_error(const std::function<void()>& f) {
  KeyedError out;
  try {
    f();
  } catch (const Error& e) {
    out = {e.kind(), e.key(), e.what(), e.hint(), true};
  }
  return out;
}
KeyedError plan_error(const std::string& text) {
  return keyed_error([&] { validate(parse_plan(text, "plan.ini")); });
}

// A password inside a share URL is refused when the plan or the command line
// is read, the fix naming the share's password keys, the password in no text.
TEST(SecuritySecrets, PlanRefusesAPasswordInAShareUrl) {
  for (const char* url : {"ftp://bob:S3cret@host/pub", "smb://bob:S3cret@host/share",
                          "afp://bob:S3cret@host/Data", "nfs://bob:S3cret@host/export"}) {
    const KeyedError e =
        plan_error(fmt::format("[share a]\nurl = {}\nserver_dir = /srv/a\nmedium = ram\n", url));
    ASSERT_TRUE(e.thrown) << url;
    EXPECT_EQ(e.kind, ErrorKind::kConfig) << url;
    EXPECT_EQ(e.key, "share a.url") << url;
    EXPECT_EQ((e.what + e.hint).find("S3cret"), std::string::npos) << e.what;
    for (const char* key : {"password_env", "password_file", "password_prompt"}) {
      EXPECT_NE(e.hint.find(key), std::string::npos) << key;
    }
    Plan p;
    const KeyedError flag = keyed_error(
        [&] { add_share_flag(p, fmt::format("a={},server_dir=/srv/a,medium=ram", url)); });
    ASSERT_TRUE(flag.thrown) << url;
    EXPECT_EQ(flag.kind, ErrorKind::kConfig) << url;
    EXPECT_EQ(flag.key, "share a.url") << url;
    EXPECT_EQ((flag.what + flag.hint).find("S3cret"), std::string::npos) << flag.what;
  }
}

// What `diagnose --dry-run` must refuse before anything connects: each a
// config error naming its key, with a fix.
TEST(Plan, InputThatCannotBeRunIsAConfigErrorNamingItsKey) {
  const std::string share = "[share a]\nserver_dir = /srv/a\nmedium = ram\nurl = ";
  const std::string many_sizes = [] {
    std::string v = "[disk]\nsizes = ";
    for (int i = 0; i < 1'000'000; ++i) v += "1MB,";
    return v + "\n";
  }();
  const std::pair<std::string, std::string> cases[] = {
      {"[link]\nnominal = 99999999999999999999999gbit\n", "link.nominal"},
      {share + "smb://h/s%zz\n", "share a.url"},
      {share + "ftp://h:99999/s\n", "share a.url"},
      {"[server]\nram_dir = /tmp/../../etc\n", "server.ram_dir"},
      {"[client]\ndisk_dir = /var/./tmp\n", "client.disk_dir"},
      {share.substr(0, share.find("server_dir")) + "server_dir = /srv/../etc\nurl = null:\n",
       "share a.server_dir"},
      {many_sizes, "disk.sizes"},
      {"[protocol]\nsizes = " +
           [] {
             std::string v;
             for (int i = 0; i <= kMaxSizes; ++i) v += "1MB,";
             return v;
           }() +
           "\n",
       "protocol.sizes"},
  };
  for (const auto& [text, key] : cases) {
    const KeyedError e = plan_error(text);
    ASSERT_TRUE(e.thrown) << key;
    EXPECT_EQ(e.kind, ErrorKind::kConfig) << key << ": " << e.what;
    EXPECT_EQ(e.key, key) << e.what;
    EXPECT_FALSE(e.hint.empty()) << e.what;
  }
  // The caps are in the errors, so the user knows what fits.
  EXPECT_NE(plan_error(many_sizes).what.find(std::to_string(kMaxSizes)), std::string::npos);
  // Right at the caps a plan is taken.
  std::string sizes;
  for (int i = 0; i < kMaxSizes; ++i) sizes += "1MB,";
  EXPECT_FALSE(plan_error("[disk]\nsizes = " + sizes + "\ncount = 10\n").thrown);
  EXPECT_FALSE(plan_error("[server]\nram_dir = /dev/shm/a..b\n").thrown);  // a name, not ..
}

// The samples of a whole plan are capped too (64 sizes x 1000 files x 2
// operations x 2 ends is 256000): the key behind most of them is named.
TEST(Plan, SampleCountIsCappedNamingTheKeyBehindIt) {
  std::string sizes;
  for (int i = 0; i < kMaxSizes; ++i) sizes += "1MB,";
  const KeyedError e = plan_error("[disk]\nsizes = " + sizes + "\ncount = 1000\n");
  ASSERT_TRUE(e.thrown);
  EXPECT_EQ(e.kind, ErrorKind::kConfig);
  EXPECT_EQ(e.key, "disk.count");
  EXPECT_NE(e.what.find(std::to_string(kMaxPlanSamples)), std::string::npos) << e.what;
  int64_t total = 0;
  for (const StageOutline& o :
       plan_outline(parse_plan("[disk]\nsizes = " + sizes + "\ncount = 385\n", "p"))) {
    total += o.samples;
  }
  ASSERT_LE(total, kMaxPlanSamples);
  EXPECT_FALSE(plan_error("[disk]\nsizes = " + sizes + "\ncount = 385\n").thrown);
}

TEST(Plan, AfpOptionsAreCheckedWhenThePlanIsRead) {
  const std::string base =
      "[share mac]\nurl = afp://nas/Data\nserver_dir = /srv/data\nmedium = disk\n";
  EXPECT_NO_THROW(validate(parse_plan(base + "options = depth=4, request_size=256KiB\n", "p")));
  for (const char* bad : {"depth=0", "request_size=1k", "frobnicate=1"}) {
    SCOPED_TRACE(bad);
    try {
      validate(parse_plan(base + "options = " + bad + "\n", "p"));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    }
  }
}

// Every driver's options are checked against its declared table when the
// plan is read, and an unknown one is refused the same way for each.
TEST(Plan, EveryDriverRefusesUnknownOptionsWhenThePlanIsRead) {
  for (const transfer::DriverSpec* d : transfer::driver_specs()) {
    SCOPED_TRACE(std::string(d->name));
    const std::string share = fmt::format(
        "[share s]\nurl = {}host/x\nserver_dir = /srv/x\nmedium = ram\n", d->url_prefixes.front());
    const Plan ok = parse_plan(share, "p");
    ASSERT_EQ(ok.shares.size(), 1u);
    EXPECT_EQ(ok.shares[0].driver, d->name);
    try {
      parse_plan(share + "options = frobnicate=1\n", "p");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    }
  }
}

TEST(Plan, OptionValuesOutsideTheDeclaredRangeAreRefused) {
  const std::string base =
      "[share nas]\nurl = smb://nas/ram\nserver_dir = /srv/ram\nmedium = ram\n";
  EXPECT_EQ(parse_plan(base + "options = connections=16, io_size=8MiB\n", "p")
                .shares[0]
                .options.at("connections"),
            "16");
  for (const char* bad : {"connections=17", "io_size=1k", "encrypt=maybe", "timeout=soon"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_plan(base + "options = " + bad + "\n", "p"), Error);
    Plan p;
    EXPECT_THROW(add_share_flag(p, std::string("nas=smb://nas/ram,server_dir=/srv/ram,medium=ram,"
                                               "options=") +
                                       bad),
                 Error);
  }
}

// An smb option out of its declared range is refused when the plan is read,
// with the table's hint (what the option takes), as for every driver.
TEST(Plan, AnOutOfRangeSmbOptionIsRefusedAtPlanReadWithTheTablesHint) {
  const std::string base =
      "[share nas]\nurl = smb://nas/ram\nserver_dir = /srv/ram\nmedium = ram\n";
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"io_size", "65MiB"}, {"connections", "0"}, {"timeout", "0"}}) {
    SCOPED_TRACE(key + "=" + value);
    std::string table_hint;
    try {
      transfer::check_options(transfer::driver_spec("smb"), {{key, value}});
    } catch (const Error& e) {
      table_hint = e.hint();
    }
    ASSERT_FALSE(table_hint.empty());
    try {
      parse_plan(base + "options = " + key + "=" + value + "\n", "p");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      EXPECT_EQ(e.hint(), table_hint);
    }
  }
}

// A driver that cannot write (or read) is refused for the protocol stages,
// which put files through it as well as get them.
TEST(Plan, ADriverThatCannotWriteIsRefused) {
  const Plan p = parse_plan("[share s]\nurl = null:\nmedium = ram\n", "p");
  transfer::DriverSpec spec = transfer::driver_spec("null");
  EXPECT_NO_THROW(check_share_driver(p.shares[0], spec));
  for (const bool read : {true, false}) {
    spec.caps.read = read;
    spec.caps.write = !read;
    try {
      check_share_driver(p.shares[0], spec);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    }
  }
}

TEST(Plan, Timeouts) {
  Plan d = parse_plan("", "x");
  EXPECT_GT(d.silence_timeout, d.stall_after);
  Plan p = parse_plan("[timeouts]\nsilence = 2min\nstall = 10s\n", "x");
  EXPECT_EQ(p.silence_timeout, 120);
  EXPECT_EQ(p.stall_after, 10);
  EXPECT_THROW(parse_plan("[timeouts]\nsilence = 1s\n", "x"), Error);
  EXPECT_THROW(parse_plan("[timeouts]\nstall = 0\n", "x"), Error);
  EXPECT_THROW(parse_plan("[timeouts]\nretries = 3\n", "x"), Error);
}

TEST(Plan, JsonRecordsSettleAndTimeouts) {
  // compare names plan differences: every key that changes a figure is recorded.
  namespace json = boost::json;
  Plan p = parse_plan("[disk]\nsettle = 7s\n[timeouts]\nsilence = 45s\n", "x");
  json::object j = json::parse(plan_to_json(p)).as_object();
  EXPECT_EQ(j.at("disk").at("settle").to_number<double>(), 7);
  EXPECT_EQ(j.at("timeouts").at("silence").to_number<double>(), 45);
}

// A lab throttle is recorded with the plan (compare names a change of it as
// it names a plan key's); a plan off the lab has none.
TEST(Plan, JsonRecordsTheLabThrottleOnlyWhereSet) {
  namespace json = boost::json;
  Plan p = parse_plan("", "x");
  EXPECT_FALSE(json::parse(plan_to_json(p)).as_object().contains("lab_throttle"));
  p.lab_throttle = Plan::LabThrottle{0.2, 0, 50'000'000};
  const json::object t = json::parse(plan_to_json(p)).at("lab_throttle").as_object();
  EXPECT_DOUBLE_EQ(t.at("smbd_cpu").to_number<double>(), 0.2);
  EXPECT_EQ(t.at("disk_read_bps").to_number<uint64_t>(), 0u);
  EXPECT_EQ(t.at("disk_write_bps").to_number<uint64_t>(), 50'000'000u);
}

TEST(Plan, JsonCarriesEffectiveValues) {
  Plan p = parse_plan("[tcp]\ncount = 7\n", "x");
  std::string j = plan_to_json(p);
  EXPECT_NE(j.find("\"count\":7"), std::string::npos);
  EXPECT_NE(j.find("\"source\":\"x\""), std::string::npos);
}

}  // namespace
}  // namespace cp::pipeline

namespace cp::pipeline {
namespace {

TEST(PlanDrivers, EachShareSchemeNamesItsDriver) {
  EXPECT_EQ(driver_for_url("nfs://nas/export/ram", "t"), "nfs");
  EXPECT_EQ(driver_for_url("smb://nas/ram", "t"), "smb");
  EXPECT_EQ(driver_for_url("ftps://nas/ram", "t"), "ftp");
  EXPECT_EQ(driver_for_url("afp://nas/vol", "t"), "afp");
  EXPECT_EQ(driver_for_url("/mnt/nas", "t"), "path");
  EXPECT_THROW(driver_for_url("nfs4://nas/x", "t"), Error);
}

}  // namespace
}  // namespace cp::pipeline

// The plan files users copy (examples/) and the plan table they read
// (docs/plan.md) are held to what parse_plan takes.
namespace cp::pipeline {
namespace {

const std::string kSource = CP_SOURCE_DIR;

// The effective plan without its file name, for comparing values.
std::string values_of(const Plan& p) {
  boost::json::object o = boost::json::parse(plan_to_json(p)).as_object();
  o.erase("source");
  return boost::json::serialize(o);
}

TEST(PlanExamples, EveryExamplePlanLoadsAndValidates) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/examples")) {
    if (e.path().extension() != ".ini") continue;
    ++n;
    try {
      Plan p = load_plan(e.path().string());
      settle_server_disk_dir(p);
      validate(p);
    } catch (const Error& err) {
      ADD_FAILURE() << describe(err);
    }
  }
  EXPECT_GE(n, 1) << "no examples/*.ini";
}

// examples/plan.ini says "the values shown are the defaults".
TEST(PlanExamples, ReferencePlanSetsOnlyTheDefaults) {
  const Plan p = load_plan(kSource + "/examples/plan.ini");
  EXPECT_TRUE(p.shares.empty());
  EXPECT_EQ(values_of(p), values_of(Plan{}));
}

// Each key of each section, set or commented out ("# key = value"), under
// its section's header (also commented out for the sample share).
std::map<std::string, std::set<std::string>> keys_in_reference(const std::string& text) {
  static const std::regex header(R"(^\[(\w+)[^\]]*\])"), entry(R"(^(\w+)\s*=)");
  std::map<std::string, std::set<std::string>> out;
  std::string section;
  for (std::string_view raw : split(text, '\n')) {
    const size_t start = raw.find_first_not_of("# \t");
    if (start == std::string_view::npos) continue;
    const std::string line(raw.substr(start));
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      section = m[1];
    } else if (!section.empty() && std::regex_search(line, m, entry)) {
      out[section].insert(m[1]);
    }
  }
  return out;
}

TEST(PlanExamples, ReferencePlanNamesEveryKeyAndNoOther) {
  const std::optional<std::string> text = read_file(kSource + "/examples/plan.ini");
  ASSERT_TRUE(text.has_value());
  const auto shown = keys_in_reference(*text);
  std::map<std::string, std::set<std::string>> taken;
  for (const auto& [section, keys] : plan_keys()) taken[section].insert(keys.begin(), keys.end());
  EXPECT_EQ(shown, taken);
}

// docs/plan.md's table: per row the sections (first column, kept from the
// row above when empty), the keys and their defaults.
struct ReadmeRow {
  std::vector<std::string> sections, keys, defaults;
  bool literal_defaults = false;  // every default is a value, not prose
};

// Splits a cell at commas outside backticks; `literal` says whether every
// item is a value (`1MiB`, 10, yes) rather than prose ("detected").
std::vector<std::string> cell_items(std::string_view cell, bool* literal) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : cell) {
    if (c == '`') quoted = !quoted;
    if (c == ',' && !quoted) {
      out.emplace_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.emplace_back(trim(cur));
  static const std::regex value(R"(^(`[^`]+`|[0-9]+|yes|no)$)");
  *literal = true;
  for (std::string& s : out) {
    if (!std::regex_match(s, value)) *literal = false;
    if (s.size() >= 2 && s.front() == '`') s = s.substr(1, s.size() - 2);
  }
  return out;
}

std::vector<ReadmeRow> readme_plan_table() {
  const std::optional<std::string> text = read_file(kSource + "/docs/plan.md");
  EXPECT_TRUE(text.has_value());
  if (!text) return {};
  const size_t begin = text->find("\n| section | key | default | meaning |\n");
  const size_t end = text->find("\n\n", begin);
  EXPECT_NE(begin, std::string::npos);
  EXPECT_NE(end, std::string::npos);
  if (begin == std::string::npos || end == std::string::npos) return {};
  static const std::regex section(R"(`\[(\w+)[^\]]*\]`)"), key("`(\\w+)`");
  std::vector<ReadmeRow> rows;
  std::vector<std::string> sections;
  for (std::string_view line : split(std::string_view(*text).substr(begin, end - begin), '\n')) {
    if (!line.starts_with("| ") && !line.starts_with("| |") && !line.starts_with("||")) continue;
    std::vector<std::string_view> cells = split(line, '|');
    if (cells.size() < 5) continue;
    const std::string first(cells[1]), second(cells[2]);
    if (first.find("section") != std::string::npos || second.find("---") != std::string::npos ||
        first.find("---") != std::string::npos) {
      continue;  // the header and its rule
    }
    if (!trim(first).empty()) {
      sections.clear();
      for (std::sregex_iterator it(first.begin(), first.end(), section), e; it != e; ++it) {
        sections.push_back((*it)[1]);
      }
    }
    ReadmeRow row;
    row.sections = sections;
    for (std::sregex_iterator it(second.begin(), second.end(), key), e; it != e; ++it) {
      row.keys.push_back((*it)[1]);
    }
    row.defaults = cell_items(trim(cells[3]), &row.literal_defaults);
    rows.push_back(row);
  }
  return rows;
}

TEST(PlanReadme, PlanTableListsExactlyTheKeysThePlanTakes) {
  std::map<std::string, std::set<std::string>> documented, taken;
  for (const ReadmeRow& r : readme_plan_table()) {
    for (const auto& s : r.sections) documented[s].insert(r.keys.begin(), r.keys.end());
  }
  for (const auto& [section, keys] : plan_keys()) taken[section].insert(keys.begin(), keys.end());
  EXPECT_EQ(documented, taken);
}

TEST(PlanReadme, PlanTableDefaultsAreTheProgramsDefaults) {
  int checked = 0;
  for (const ReadmeRow& r : readme_plan_table()) {
    if (!r.literal_defaults || r.defaults.size() != r.keys.size()) continue;
    for (const auto& s : r.sections) {
      for (size_t i = 0; i < r.keys.size(); ++i) {
        const std::string text = fmt::format("[{}]\n{} = {}\n", s, r.keys[i], r.defaults[i]);
        try {
          EXPECT_EQ(values_of(parse_plan(text, "README")), values_of(Plan{})) << text;
        } catch (const Error& e) {
          ADD_FAILURE() << text << describe(e);
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
}

// What a plan would measure: the most samples per stage and the bytes they
// move, for the default plan with one share and with the size scan on.
TEST(PlanFiles, KeysAreReadAndCheckedAgainstTheirRanges) {
  const Plan p = parse_plan(
      "[files]\ncount = 5000\nsize = 0\ndirs = 50\norder = random\nbudget = 10s\n"
      "in_flight = 8\n",
      "t.ini");
  EXPECT_EQ(p.files_count, 5000u);
  EXPECT_EQ(p.files_size, 0u);
  EXPECT_EQ(p.files_dirs, 50u);
  EXPECT_EQ(p.files_order, "random");
  EXPECT_DOUBLE_EQ(p.files_budget, 10);
  EXPECT_EQ(p.files_in_flight, 8);
  for (const char* bad : {"count = 5", "size = 2MiB", "order = shuffled", "in_flight = 0",
                          "dirs = 0", "count = 2000000"}) {
    try {
      parse_plan(fmt::format("[files]\n{}\n", bad), "t.ini");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig) << bad;
    }
  }
  Plan more_dirs = parse_plan("[files]\ncount = 10\ndirs = 20\n", "t.ini");
  try {
    validate(more_dirs);
    ADD_FAILURE() << "dirs > count accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
}

TEST(PlanOutline, CountsEveryStagesSamplesAndBytes) {
  Plan p = parse_plan(
      "[disk]\nsizes = 10MB, 100MB\ncount = 4\n[tcp]\ncount = 5\n[protocol]\nsizes = 10MB\n"
      "count = 3\nsize_scan = yes\nscan_sizes = 4k, 1MiB\n"
      "[share f]\nurl = null:\nmedium = ram\n",
      "t.ini");
  std::map<std::string, std::pair<int, uint64_t>> got;
  for (const StageOutline& o : plan_outline(p)) got[o.stage] = {o.samples, o.bytes};
  // The server's smallest files once more with a flush per block (the synchronous write rate).
  EXPECT_EQ(got.at("disk server"), std::make_pair(2 * 4 * 2 + 4, uint64_t{110'000'000} * 4 * 2 +
                                                                     uint64_t{10'000'000} * 4));
  EXPECT_EQ(got.at("disk client"), std::make_pair(2 * 4 * 2, uint64_t{110'000'000} * 4 * 2));
  EXPECT_EQ(got.at("tcp server->client"), std::make_pair(5, uint64_t{0}));
  EXPECT_EQ(got.at("tcp client->server"), std::make_pair(5, uint64_t{0}));
  EXPECT_EQ(got.at("f"), std::make_pair(3 * 2, uint64_t{10'000'000} * 3 * 2));
  EXPECT_EQ(got.at("size-scan f"), std::make_pair(2 * 4, (uint64_t{16} << 20) * 2 * 4));
  // Two passes (order both) of four phases; each pass writes and reads 1000 x 4 KiB.
  EXPECT_EQ(got.at("files server"), std::make_pair(2 * 4, uint64_t{1000} * 4096 * 2 * 2));
  EXPECT_EQ(got.at("files client"), std::make_pair(2 * 4, uint64_t{1000} * 4096 * 2 * 2));
  // And over each share, after the protocol stages.
  EXPECT_EQ(got.at("files f"), std::make_pair(2 * 4, uint64_t{1000} * 4096 * 2 * 2));
  EXPECT_EQ(got.size(), 9u);
  EXPECT_EQ(plan_outline(p).back().stage, "files f");
  p.files_shares = false;
  EXPECT_EQ(plan_outline(p).size(), 8u);
  p.disk_enabled = p.tcp_enabled = p.proto_enabled = p.files_enabled = false;
  EXPECT_TRUE(plan_outline(p).empty());
}

// A plan written when the transfer-size scan was the "sweep" loads the same;
// the old name and the new one together are one key set twice.
TEST(PlanKeys, OlderSweepKeysAreReadAsTheSizeScanKeys) {
  const Plan old_names = parse_plan(
      "[protocol]\nsweep = yes\nsweep_sizes = 4k, 1MiB\nsweep_bytes = 8MiB\nsweep_file = 32MiB\n",
      "old.ini");
  const Plan new_names = parse_plan(
      "[protocol]\nsize_scan = yes\nscan_sizes = 4k, 1MiB\nscan_bytes = 8MiB\nscan_file = 32MiB\n",
      "new.ini");
  for (const Plan* p : {&old_names, &new_names}) {
    EXPECT_TRUE(p->size_scan);
    EXPECT_EQ(p->scan_sizes, (std::vector<uint64_t>{4096, 1u << 20}));
    EXPECT_EQ(p->scan_bytes, 8u << 20);
    EXPECT_EQ(p->scan_file, 32u << 20);
  }
  EXPECT_EQ(values_of(old_names), values_of(new_names));  // and nothing else differs
  try {
    parse_plan("[protocol]\nsweep = yes\nsize_scan = no\n", "both.ini");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
}

}  // namespace
}  // namespace cp::pipeline
