#include "tune_agent/knobs.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"

namespace cp::tune {
namespace {

TEST(Knobs, EveryNameIsUniqueAndNamesItsEndpoint) {
  std::set<std::string> names;
  for (const auto& k : knob_table()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_TRUE(k.endpoint == "server" || k.endpoint == "client" || k.endpoint == "both") << k.name;
    EXPECT_FALSE(k.affects.empty()) << k.name;
    EXPECT_EQ(k.privilege, k.mechanism == Mechanism::kClientOption ? "none" : "root") << k.name;
  }
  for (const char* required : {"server.readahead",
                               "server.scheduler",
                               "server.max_sectors_kb",
                               "server.write_cache",
                               "server.tcp_rmem",
                               "client.tcp_wmem",
                               "server.tcp_congestion_control",
                               "samba.smb2_max_read",
                               "samba.smb2_max_write",
                               "samba.aio_read_size",
                               "samba.use_sendfile",
                               "samba.socket_options",
                               "samba.server_multi_channel_support",
                               "client.smb_io_size",
                               "client.afp_depth",
                               "client.afp_request_size",
                               "client.nfs_depth",
                               "client.nfs_request_size",
                               "client.nfs_version",
                               "link.mtu"}) {
    EXPECT_EQ(names.count(required), 1u) << required;
  }
}

TEST(Knobs, UnknownKnobIsAUsageError) {
  try {
    find_knob("server.nonsense");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
}

TEST(Knobs, ValuesAreNormalisedByKind) {
  EXPECT_EQ(normalize_value(find_knob("server.readahead"), "128K"), "131072");
  EXPECT_EQ(normalize_value(find_knob("samba.smb2_max_read"), "8MiB"), "8388608");
  EXPECT_EQ(normalize_value(find_knob("server.max_sectors_kb"), "1M"), "1024");
  EXPECT_EQ(normalize_value(find_knob("server.max_sectors_kb"), "512"), "512");
  EXPECT_EQ(normalize_value(find_knob("samba.use_sendfile"), "on"), "yes");
  EXPECT_EQ(normalize_value(find_knob("server.write_cache"), "no"), "0");
  EXPECT_EQ(normalize_value(find_knob("server.tcp_rmem"), " 4096 131072 6291456 "),
            "4096 131072 6291456");
}

TEST(Knobs, BadValuesAreUsageErrors) {
  for (auto [knob, value] :
       {std::pair{"server.readahead", "lots"}, std::pair{"samba.use_sendfile", "maybe"},
        std::pair{"server.max_sectors_kb", "1000B"}}) {
    try {
      normalize_value(find_knob(knob), value);
      FAIL() << knob << "=" << value;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << knob;
    }
  }
}

TEST(Knobs, KnobArgSplitsValuesAndDropsDuplicates) {
  KnobRequest r = parse_knob_arg("samba.smb2_max_read=64K,1M,65536,8M");
  ASSERT_NE(r.knob, nullptr);
  EXPECT_EQ(r.knob->name, "samba.smb2_max_read");
  EXPECT_EQ(r.values, (std::vector<std::string>{"65536", "1048576", "8388608"}));
  for (const char* bad : {"samba.smb2_max_read", "=1", "samba.smb2_max_read="}) {
    EXPECT_THROW(parse_knob_arg(bad), Error) << bad;
  }
}

// A sample's layer, where and op, and whether a knob should affect it.
struct Affected {
  const char* layer;
  const char* where;
  const char* op;
  bool affected;
};

// Whether knob `name` affects each of `samples` as they say.
void expect_affects(const std::string& name, std::initializer_list<Affected> samples) {
  const Knob& k = find_knob(name);
  for (const Affected& s : samples)
    EXPECT_EQ(affects_sample(k, s.layer, s.where, s.op), s.affected)
        << name << ": " << s.layer << " " << s.where << " " << s.op;
}

TEST(Knobs, ReadaheadAffectsOnlyReadsFromTheServerDisk) {
  expect_affects("server.readahead", {{"smb", "disk", "read", true},
                                      {"ftp", "disk", "read", true},
                                      {"smb", "disk", "write", false},
                                      {"smb", "ram", "read", false},
                                      {"disk", "server", "read", false},  // O_DIRECT: no readahead
                                      {"tcp", "server->client", "send", false}});
}

TEST(Knobs, SambaKnobsAffectOnlySmb) {
  expect_affects("samba.smb2_max_read", {{"smb", "ram", "read", true},
                                         {"smb", "disk", "read", true},
                                         {"ftp", "ram", "read", false},
                                         {"smb", "ram", "write", false}});
  expect_affects("client.tcp_rmem", {{"tcp", "server->client", "send", true},
                                     {"ftp", "ram", "read", true},
                                     {"disk", "client", "read", false}});
}

TEST(Knobs, MaxXmitRunsTheWholeSweepUnderNt1OnBothEnds) {
  const Knob& k = find_knob("samba.max_xmit");
  EXPECT_EQ(k.mechanism, Mechanism::kSamba);
  EXPECT_EQ(k.param, "max xmit");
  const std::vector<std::pair<std::string, std::string>> server = {{"server min protocol", "NT1"},
                                                                   {"server max protocol", "NT1"}};
  EXPECT_EQ(k.with, server);
  const std::vector<std::pair<std::string, std::string>> client = {{"min_protocol", "NT1"},
                                                                   {"max_protocol", "NT1"}};
  EXPECT_EQ(k.client_options, client);
  EXPECT_TRUE(affects_sample(k, "smb", "ram", "read"));
  EXPECT_FALSE(affects_sample(k, "ftp", "ram", "read"));
}

TEST(Knobs, NetatalkKnobsEditAfpConfAndAffectOnlyAfp) {
  for (const char* name : {"netatalk.server_quantum", "netatalk.dsireadbuf"}) {
    const Knob& k = find_knob(name);
    EXPECT_EQ(k.mechanism, Mechanism::kAfpConf) << name;
    EXPECT_EQ(k.endpoint, "server");
    EXPECT_TRUE(affects_sample(k, "afp", "disk", "read"));
    EXPECT_FALSE(affects_sample(k, "smb", "disk", "read"));
  }
  EXPECT_EQ(normalize_value(find_knob("netatalk.server_quantum"), "256K"), "262144");
}

}  // namespace
}  // namespace cp::tune
