#include "core/facts_message.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/testing/sample_messages.h"

namespace cp::msg {
namespace {

namespace json = boost::json;

// A server's facts as a lab run stored them (probe/sysinfo.cc's shape, with
// the orchestrator's "agent" and "agent_max_rss_kb"), Samba parameters in
// testparm's order.
constexpr const char* kStoredServer =
    R"j({"hostname":"cp-server-6","os":"Debian GNU/Linux 12 (bookworm)",)j"
    R"j("kernel":"6.1.0-18-amd64","arch":"x86_64","cpu_model":"AMD EPYC","cpu_cores":2,)j"
    R"j("boot_id":"9c76ce76","memory_bytes":25276059648,)j"
    R"j("net":{"peer":"198.19.6.2","name":"cpd-s","address":"198.19.6.1","mtu":1500,)j"
    R"j("speed_mbit":10000,"shaped_rate_bit":null},)j"
    R"j("ram_dir":{"path":"/lab/ram","fs_type":"tmpfs","total_bytes":2147483648,)j"
    R"j("avail_bytes":2147483648},)j"
    R"j("disk_dir":{"path":"/lab/disk","fs_type":"ext4","total_bytes":3094126592,)j"
    R"j("avail_bytes":3077320704,"mount_source":"/dev/loop2","device":{"name":"loop2",)j"
    R"j("disk":"loop2","partition":false,"read_ahead_kb":2560,"scheduler":"none",)j"
    R"j("rotational":true,"backing_file":"/lab/disk.img","slaves":[]},"zfs":null},)j"
    R"j("tcp_sysctls":{"net.ipv4.tcp_rmem":"4096 131072 33554432",)j"
    R"j("net.ipv4.tcp_wmem":"4096 16384 4194304","net.core.rmem_max":"4194304",)j"
    R"j("net.core.wmem_max":"4194304","net.ipv4.tcp_congestion_control":"bbr",)j"
    R"j("net.ipv4.tcp_window_scaling":"1","net.ipv4.tcp_mtu_probing":null},)j"
    R"j("samba":{"config_path":"/lab/smb.conf","found_by":"plan","source":"testparm",)j"
    R"j("sha256":"7420937a","global":{"workgroup":"CHOKEPOINT","smb ports":"445",)j"
    R"j("idmap config * : backend":"tdb","printing":"bsd"}},)j"
    R"j("euid":0,"degraded":[],"agent":{"role":"server","arch":"x86_64"},)j"
    R"j("agent_max_rss_kb":7584})j";

// The sample facts (core/testing/sample_messages.h) with what the
// orchestrator adds as it stores them: the agent's role and peak RSS.
Facts some_facts() {
  Facts f = testing::sample_facts();
  f.agent = AgentFacts{"server", "aarch64"};
  f.agent_max_rss_kb = 25000;
  return f;
}

TEST(FactsMessage, EveryFieldSurvivesTheWire) {
  const Facts f = some_facts();
  const Facts g = decode<Facts>(json::parse(json::serialize(to_json(f))), "facts");
  EXPECT_EQ(g.hostname, "nas");
  EXPECT_EQ(g.os, "TrueNAS");
  EXPECT_EQ(g.kernel, "6.6.44");
  EXPECT_EQ(g.arch, "aarch64");
  EXPECT_EQ(g.cpu_model, "Cortex-A72");
  EXPECT_EQ(g.cpu_cores, 4);
  EXPECT_EQ(g.boot_id, "b-1");
  EXPECT_EQ(g.memory_bytes, 8ull << 30);
  ASSERT_TRUE(g.net.has_value());
  EXPECT_EQ(g.net->peer, "198.18.0.2");
  EXPECT_EQ(g.net->name, "eth0");
  EXPECT_EQ(g.net->address, "198.18.0.1");
  EXPECT_EQ(g.net->mtu, 9000);
  EXPECT_EQ(g.net->speed_mbit, 2500);
  EXPECT_EQ(g.net->shaped_rate_bit, 1000000000u);
  ASSERT_TRUE(g.ram_dir.has_value());
  EXPECT_EQ(g.ram_dir->fs_type, "tmpfs");
  EXPECT_EQ(g.ram_dir->total_bytes, 1u << 30);
  EXPECT_FALSE(g.ram_dir->with_device);
  ASSERT_TRUE(g.disk_dir.has_value());
  EXPECT_TRUE(g.disk_dir->with_device);
  EXPECT_EQ(g.disk_dir->mount_source, "tank/share");
  ASSERT_TRUE(g.disk_dir->device.has_value());
  EXPECT_EQ(g.disk_dir->device->disk, "sda");
  EXPECT_TRUE(g.disk_dir->device->partition);
  EXPECT_EQ(g.disk_dir->device->read_ahead_kb, 128);
  EXPECT_EQ(g.disk_dir->device->scheduler, "mq-deadline");
  EXPECT_EQ(g.disk_dir->device->rotational, true);
  EXPECT_FALSE(g.disk_dir->device->backing_file.has_value());
  EXPECT_EQ(g.disk_dir->device->slaves, std::vector<std::string>{"sdb"});
  ASSERT_TRUE(g.disk_dir->zfs.has_value());
  EXPECT_EQ(g.disk_dir->zfs->arc_c_max_bytes, 8ull << 30);
  EXPECT_FALSE(g.disk_dir->zfs->arc_size_bytes.has_value());
  ASSERT_EQ(g.tcp_sysctls.size(), 2u);
  EXPECT_EQ(g.tcp_sysctls[0].name, "net.ipv4.tcp_rmem");
  EXPECT_FALSE(g.tcp_sysctls[1].value.has_value());
  ASSERT_TRUE(g.samba.has_value());
  EXPECT_EQ(g.samba->found_by, "running smbd (pid 7)");
  EXPECT_EQ(g.samba->source, "testparm");
  EXPECT_EQ(g.samba->sha256, std::string(64, 'a'));
  ASSERT_EQ(g.samba->global.size(), 2u);
  EXPECT_EQ(g.samba->global[1].name, "aio read size");
  EXPECT_EQ(g.euid, 1000u);
  ASSERT_EQ(g.degraded.size(), 1u);
  EXPECT_EQ(g.degraded[0].fact, "process_netns");
  EXPECT_EQ(g.degraded[0].method, "assumed local");
  EXPECT_EQ(g.degraded[0].privilege, "root");
  ASSERT_TRUE(g.agent.has_value());
  EXPECT_EQ(g.agent->role, "server");
  EXPECT_EQ(g.agent->arch, "aarch64");
  EXPECT_EQ(g.agent_max_rss_kb, 25000u);
  ASSERT_EQ(g.file_servers.size(), 3u);
  EXPECT_EQ(g.file_servers[0].pid, 812);
  EXPECT_EQ(g.file_servers[1].pid, 4410);
  EXPECT_EQ(g.file_servers[1].config_path, "/ct/vsftpd.conf");
  ASSERT_EQ(g.file_servers[1].settings.size(), 1u);
  EXPECT_EQ(g.file_servers[1].settings[0].value, "20000000");
  EXPECT_EQ(g.file_servers[2].pid, 0);
  EXPECT_FALSE(to_json(f).at("file_servers").as_array()[2].as_object().contains("pid"));
}

// The stored JSON stays what it was: read back and written again, a stored
// run's facts are the same text, key order and nulls included.
TEST(FactsMessage, StoredFactsReencodeToTheSameText) {
  EXPECT_EQ(json::serialize(to_json(read_stored<Facts>(kStoredServer))), kStoredServer);
}

TEST(FactsMessage, UnknownIsNullNotZero) {
  Facts f;
  f.net = NetFacts{"10.0.0.1", {}, {}, {}, {}, {}, "no route to '10.0.0.1': unreachable"};
  const json::object o = to_json(f);
  EXPECT_TRUE(o.at("hostname").is_null());
  EXPECT_TRUE(o.at("memory_bytes").is_null());
  EXPECT_TRUE(o.at("ram_dir").is_null());
  EXPECT_TRUE(o.at("samba").is_null());
  EXPECT_TRUE(o.at("net").at("mtu").is_null());
  EXPECT_EQ(o.at("net").at("error"), json::value("no route to '10.0.0.1': unreachable"));
  EXPECT_FALSE(o.contains("agent"));
  EXPECT_FALSE(o.contains("agent_max_rss_kb"));
  const Facts g = decode<Facts>(o, "facts");
  EXPECT_FALSE(g.hostname.has_value());
  EXPECT_FALSE(g.net->mtu.has_value());
  EXPECT_FALSE(g.net->speed_mbit.has_value());
}

// A ram_dir has no device keys; a disk_dir on tmpfs has them, null.
TEST(FactsMessage, OnlyTheDiskDirCarriesDeviceKeys) {
  Facts f;
  f.ram_dir = DirFacts{"/ram", "tmpfs", {}, {}, false, {}, {}, {}};
  f.disk_dir = DirFacts{"/disk", "tmpfs", {}, {}, true, {}, {}, {}};
  const json::object o = to_json(f);
  EXPECT_FALSE(o.at("ram_dir").as_object().contains("device"));
  EXPECT_TRUE(o.at("disk_dir").at("device").is_null());
  EXPECT_TRUE(o.at("disk_dir").at("zfs").is_null());
  EXPECT_TRUE(o.at("disk_dir").at("mount_source").is_null());
}

TEST(FactsMessage, UnreadableSambaConfigKeepsPathAndError) {
  Facts f;
  f.samba = SambaFacts{0, "/etc/x.conf", "cannot read /etc/x.conf: denied", "", "", "", {}};
  const json::object o = to_json(f);
  EXPECT_EQ(json::serialize(o.at("samba")),
            R"({"config_path":"/etc/x.conf","error":"cannot read /etc/x.conf: denied"})");
  const Facts g = read_stored<Facts>(json::serialize(o));
  EXPECT_EQ(g.samba->error, "cannot read /etc/x.conf: denied");
  EXPECT_TRUE(g.samba->global.empty());
}

// Runs stored before a field existed (no boot_id, euid, degraded, zfs, agent)
// and test fixtures with only some keys read with those fields unknown.
TEST(FactsMessage, OlderStoredFactsReadWithDefaults) {
  const Facts f =
      read_stored<Facts>(R"({"hostname":"mac","kernel":"24.1","net":{"mtu":1500},)"
                         R"("disk_dir":{"path":"/srv","device":{"name":"md0","disk":"md0"}},)"
                         R"("tcp_sysctls":{"net.ipv4.tcp_rmem":"4096 131072 6291456"}})");
  EXPECT_EQ(f.hostname, "mac");
  EXPECT_FALSE(f.boot_id.has_value());
  EXPECT_FALSE(f.euid.has_value());
  EXPECT_TRUE(f.degraded.empty());
  EXPECT_FALSE(f.agent.has_value());
  EXPECT_FALSE(f.samba.has_value());
  EXPECT_EQ(f.net->mtu, 1500);
  EXPECT_FALSE(f.net->name.has_value());
  EXPECT_EQ(f.disk_dir->device->disk, "md0");
  EXPECT_FALSE(f.disk_dir->device->read_ahead_kb.has_value());
  EXPECT_FALSE(f.disk_dir->zfs.has_value());
  ASSERT_NE(find_value(f.tcp_sysctls, "net.ipv4.tcp_rmem"), nullptr);
  EXPECT_EQ(*find_value(f.tcp_sysctls, "net.ipv4.tcp_rmem"), "4096 131072 6291456");
  EXPECT_EQ(find_value(f.tcp_sysctls, "net.core.rmem_max"), nullptr);
}

TEST(FactsMessage, MistypedStoredFieldsKeepTheirDefaults) {
  const Facts f =
      read_stored<Facts>(R"({"hostname":7,"cpu_cores":"two","memory_bytes":-1,"net":"eth0",)"
                         R"("degraded":[1,{"fact":"x"}],"tcp_sysctls":{"a":3}})");
  EXPECT_FALSE(f.hostname.has_value());
  EXPECT_FALSE(f.cpu_cores.has_value());
  EXPECT_FALSE(f.memory_bytes.has_value());
  EXPECT_FALSE(f.net.has_value());
  ASSERT_EQ(f.degraded.size(), 1u);
  EXPECT_EQ(f.degraded[0].fact, "x");
  EXPECT_EQ(find_value(f.tcp_sysctls, "a"), nullptr);
}

TEST(FactsMessage, DamagedStoredTextReadsAsNothingKnown) {
  const Facts f = read_stored<Facts>("{not json");
  EXPECT_FALSE(f.hostname.has_value());
  EXPECT_FALSE(f.net.has_value());
  EXPECT_TRUE(f.tcp_sysctls.empty());
}

TEST(FactsMessage, AFactsReplyThatIsNoObjectIsAPeerError) {
  try {
    decode<Facts>(json::value("facts"), "facts");
    FAIL() << "decoded a string as facts";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
  }
}

// From the peer, null or absent is "could not tell"; a value of the wrong
// type is the peer's error naming the field (nested ones by their path).
TEST(SecurityFactsMessage, AMistypedFieldInAFactsReplyNamesIt) {
  struct Case {
    const char* text;
    const char* field;
  };
  for (const Case& c :
       {Case{R"({"hostname":7})", "'hostname'"}, Case{R"({"cpu_cores":"two"})", "'cpu_cores'"},
        Case{R"({"net":{"mtu":"big"}})", "facts.net': field 'mtu'"},
        Case{R"({"degraded":[1]})", "'degraded'"},
        Case{R"({"tcp_sysctls":{"a":3}})", "'tcp_sysctls'"},
        Case{R"({"disk_dir":{"device":{"slaves":[1]}}})", "'slaves'"}}) {
    SCOPED_TRACE(c.text);
    try {
      decode<Facts>(json::parse(c.text), "facts");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer);
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
    }
  }
  const Facts f = decode<Facts>(json::parse(R"({"hostname":null,"net":null})"), "facts");
  EXPECT_FALSE(f.hostname.has_value());
  EXPECT_FALSE(f.net.has_value());
}

}  // namespace
}  // namespace cp::msg
