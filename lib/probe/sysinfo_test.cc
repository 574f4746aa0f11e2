#include "probe/sysinfo.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/text.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

namespace json = boost::json;
using testing::TempDir;

TEST(Sysinfo, FactsOfThisMachine) {
  TempDir disk;
  FactsRequest req;
  req.disk_dir = disk.path();
  json::object f = msg::to_json(collect_facts(req));
  for (const char* key : {"hostname", "os", "kernel", "arch", "cpu_model", "cpu_cores",
                          "memory_bytes", "net", "ram_dir", "disk_dir", "tcp_sysctls", "samba"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  utsname u{};
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(f["kernel"], json::value(u.release));
  EXPECT_EQ(f["arch"], json::value(u.machine));
  ASSERT_TRUE(f["hostname"].is_string());
  EXPECT_FALSE(f["hostname"].as_string().empty());
  ASSERT_TRUE(f["cpu_cores"].is_int64());
  EXPECT_EQ(f["cpu_cores"].as_int64(), sysconf(_SC_NPROCESSORS_ONLN));
  ASSERT_TRUE(f["memory_bytes"].is_uint64());
  EXPECT_GT(f["memory_bytes"].as_uint64(), 1u << 20);
  EXPECT_TRUE(f["net"].is_null());
  EXPECT_TRUE(f["ram_dir"].is_null());

  ASSERT_TRUE(f["disk_dir"].is_object()) << json::serialize(f);
  const json::object& d = f["disk_dir"].as_object();
  EXPECT_EQ(d.at("path"), json::value(disk.path()));
  EXPECT_TRUE(d.at("fs_type").is_string());
  EXPECT_TRUE(d.at("total_bytes").is_uint64());
  EXPECT_TRUE(d.contains("device"));
  struct stat st;
  ASSERT_EQ(::stat(disk.path().c_str(), &st), 0);
  const std::string sys_link =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  if (::access(sys_link.c_str(), F_OK) == 0) {
    ASSERT_TRUE(d.at("device").is_object()) << json::serialize(d);
    const json::object& dev = d.at("device").as_object();
    EXPECT_TRUE(dev.at("name").is_string());
    EXPECT_TRUE(dev.at("scheduler").is_string() || dev.at("scheduler").is_null());
    EXPECT_TRUE(dev.at("rotational").is_bool());
  }
}

// The client's end is asked without Samba: no configuration is read, and no
// privilege smbd's would need is counted as degraded.
TEST(Sysinfo, FactsWithoutSambaLeaveItOut) {
  FactsRequest req;
  req.samba = false;
  const msg::Facts f = collect_facts(req);
  EXPECT_FALSE(f.samba.has_value());
  for (const msg::DegradedFact& d : f.degraded) {
    EXPECT_EQ(d.fact.find("smb"), std::string::npos) << d.fact;
  }
}

TEST(Sysinfo, LoopbackPeerUsesLo) {
  FactsRequest req;
  req.peer_address = "127.0.0.1";
  json::object f = msg::to_json(collect_facts(req));
  ASSERT_TRUE(f["net"].is_object());
  const json::object& net = f["net"].as_object();
  EXPECT_EQ(net.at("name"), json::value("lo")) << json::serialize(net);
  EXPECT_EQ(net.at("address"), json::value("127.0.0.1"));
  EXPECT_EQ(net.at("mtu"), json::value(65536));
  EXPECT_TRUE(net.at("speed_mbit").is_null());
  EXPECT_TRUE(net.contains("shaped_rate_bit"));
  EXPECT_FALSE(net.contains("error"));
}

TEST(Sysinfo, UnresolvablePeerIsNullNotAnError) {
  FactsRequest req;
  req.peer_address = "bad host!";  // glibc refuses the name without asking DNS
  json::object f = msg::to_json(collect_facts(req));
  ASSERT_TRUE(f["net"].is_object());
  EXPECT_TRUE(f["net"].as_object().at("name").is_null());
  EXPECT_TRUE(f["net"].as_object().at("error").is_string());
}

TEST(Sysinfo, TmpfsRamDir) {
  TempDir dir;
  std::string ram = "/dev/shm";
  const std::string mnt = dir.file("ram");
  bool mounted = false;
  if (::access(ram.c_str(), F_OK) != 0) {
    ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) GTEST_SKIP() << "no tmpfs";
    ram = mnt;
    mounted = true;
  }
  FactsRequest req;
  req.ram_dir = ram;
  json::object f = msg::to_json(collect_facts(req));
  ASSERT_TRUE(f["ram_dir"].is_object());
  const json::object& r = f["ram_dir"].as_object();
  EXPECT_EQ(r.at("fs_type"), json::value("tmpfs"));
  EXPECT_GT(r.at("total_bytes").as_uint64(), 0u);
  EXPECT_FALSE(r.contains("device"));
  if (mounted) ::umount2(mnt.c_str(), MNT_DETACH);
}

TEST(Sysinfo, MissingDirectoryIsAConfigError) {
  FactsRequest req;
  req.ram_dir = "/no/such/dir";
  try {
    collect_facts(req);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_STREQ(e.what(), "ram_dir '/no/such/dir' does not exist");
    EXPECT_FALSE(e.hint().empty());
  }
  TempDir dir;
  { std::ofstream(dir.file("f")) << "x"; }
  req.ram_dir.clear();
  req.disk_dir = dir.file("f");
  try {
    collect_facts(req);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos);
  }
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Sysinfo, BlockDeviceFromFakeSysfs) {
  TempDir sys;
  const std::string s = sys.path();
  for (const char* d :
       {"/dev", "/dev/block", "/devices", "/devices/pci", "/devices/pci/sda",
        "/devices/pci/sda/queue", "/devices/pci/sda/sda1", "/devices/virtual",
        "/devices/virtual/loop0", "/devices/virtual/loop0/queue", "/devices/virtual/loop0/loop",
        "/devices/virtual/dm-0", "/devices/virtual/dm-0/queue", "/devices/virtual/dm-0/slaves",
        "/devices/virtual/dm-0/slaves/sdb", "/devices/virtual/dm-0/slaves/sda2"}) {
    ASSERT_EQ(::mkdir((s + d).c_str(), 0755), 0) << d;
  }
  write(s + "/devices/pci/sda/queue/read_ahead_kb", "128\n");
  write(s + "/devices/pci/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n");
  write(s + "/devices/pci/sda/queue/rotational", "1\n");
  write(s + "/devices/pci/sda/sda1/partition", "1\n");
  write(s + "/devices/virtual/loop0/queue/scheduler", "none\n");
  write(s + "/devices/virtual/loop0/queue/rotational", "0\n");
  write(s + "/devices/virtual/loop0/loop/backing_file", "/var/lib/disk.img\n");
  ASSERT_EQ(::symlink("../../devices/pci/sda/sda1", (s + "/dev/block/8:1").c_str()), 0);
  ASSERT_EQ(::symlink("../../devices/virtual/loop0", (s + "/dev/block/7:0").c_str()), 0);
  ASSERT_EQ(::symlink("../../devices/virtual/dm-0", (s + "/dev/block/253:0").c_str()), 0);

  const auto part = block_device_facts(8, 1, s);
  ASSERT_TRUE(part.has_value());
  EXPECT_EQ(part->name, "sda1");
  EXPECT_EQ(part->disk, "sda");
  EXPECT_TRUE(part->partition);
  EXPECT_EQ(part->read_ahead_kb, 128);
  EXPECT_EQ(part->scheduler, "mq-deadline");
  EXPECT_EQ(part->rotational, true);
  EXPECT_FALSE(part->backing_file.has_value());

  const auto loop = block_device_facts(7, 0, s);
  ASSERT_TRUE(loop.has_value());
  EXPECT_EQ(loop->name, "loop0");
  EXPECT_EQ(loop->disk, "loop0");
  EXPECT_FALSE(loop->partition);
  EXPECT_FALSE(loop->read_ahead_kb.has_value());
  EXPECT_EQ(loop->scheduler, "none");
  EXPECT_EQ(loop->rotational, false);
  EXPECT_EQ(loop->backing_file, "/var/lib/disk.img");

  const auto dm = block_device_facts(253, 0, s);
  ASSERT_TRUE(dm.has_value());
  EXPECT_EQ(dm->slaves, (std::vector<std::string>{"sda2", "sdb"}));

  EXPECT_FALSE(block_device_facts(0, 42, s).has_value());
}

TEST(Sysinfo, ParseTcQdiscRate) {
  // tc -j prints rates in bytes/s: 25000000 B/s = 200 Mbit/s.
  EXPECT_EQ(parse_tc_qdisc_rate(R"([{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,)"
                                R"("options":{"rate":25000000,"burst":65525,"lat":50000}}])"),
            200000000u);
  EXPECT_EQ(
      parse_tc_qdisc_rate(
          R"([{"kind":"htb","handle":"1:","root":true,"options":{"r2q":10,"default":"0x10"}}])"),
      std::nullopt);
  EXPECT_EQ(parse_tc_qdisc_rate(R"([{"kind":"noqueue","handle":"0:","root":true,"options":{}}])"),
            std::nullopt);
  // netem's rate is an object; the lowest rate of several wins.
  EXPECT_EQ(parse_tc_qdisc_rate(
                R"([{"kind":"netem","handle":"1:","root":true,"options":{"limit":1000,)"
                R"("rate":{"rate":12500000,"packetoverhead":0}}},)"
                R"({"kind":"tbf","handle":"10:","parent":"1:1","options":{"rate":125000000}}])"),
            100000000u);
  EXPECT_EQ(parse_tc_qdisc_rate(R"([{"kind":"cake","options":{"bandwidth":"unlimited"}}])"),
            std::nullopt);
  EXPECT_EQ(parse_tc_qdisc_rate(R"([{"kind":"cake","options":{"bandwidth":1250000}}])"), 10000000u);
  EXPECT_EQ(parse_tc_qdisc_rate(""), std::nullopt);
  EXPECT_EQ(parse_tc_qdisc_rate("qdisc noqueue 0: root refcnt 2"), std::nullopt);
  EXPECT_EQ(parse_tc_qdisc_rate("[1, \"x\", {\"kind\": 3}]"), std::nullopt);
}

TEST(Sysinfo, ParseTcHtbRootRate) {
  const std::string text =
      "class htb 1:11 parent 1:10 prio 0 rate 100Mbit ceil 300Mbit burst 1600b cburst 1537b \n"
      "class htb 1:10 root rate 300Mbit ceil 300Mbit burst 1537b cburst 1537b \n";
  EXPECT_EQ(parse_tc_htb_root_rate(text), 300000000u);
  EXPECT_EQ(parse_tc_htb_root_rate("class htb 1:1 root rate 1Gbit ceil 1Gbit\n"
                                   "class htb 1:2 root rate 500Kbit ceil 500Kbit\n"),
            1000000000u);
  EXPECT_EQ(parse_tc_htb_root_rate("class tbf 8001:1 parent 8001:\n"), std::nullopt);
  EXPECT_EQ(parse_tc_htb_root_rate("class htb 1:1 root rate lots\n"), std::nullopt);
  EXPECT_EQ(parse_tc_htb_root_rate(""), std::nullopt);
}

TEST(Sysinfo, ParseScheduler) {
  // A queue/scheduler file, and the scheduler in use (the one in brackets).
  const std::pair<const char*, const char*> files[] = {
      {"none [mq-deadline] kyber bfq\n", "mq-deadline"},
      {"[none] mq-deadline\n", "none"},
      {"none\n", "none"},
      {"", ""},
  };
  for (const auto& [file, scheduler] : files) EXPECT_EQ(parse_scheduler(file), scheduler) << file;
}

TEST(Sysinfo, ParseOsRelease) {
  EXPECT_EQ(parse_os_release("NAME=\"Debian GNU/Linux\"\n"
                             "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"),
            "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(parse_os_release("PRETTY_NAME=Alpine\n"), "Alpine");
  EXPECT_EQ(parse_os_release("PRETTY_NAME='Say \\\"hi\\\"'\n"), "Say \"hi\"");
  EXPECT_EQ(parse_os_release("NAME=x\n"), "");
}

TEST(Sysinfo, TcpSysctlsFromFakeProc) {
  TempDir proc;
  std::filesystem::create_directories(proc.file("sys/net/ipv4"));
  std::filesystem::create_directories(proc.file("sys/net/core"));
  write(proc.file("sys/net/ipv4/tcp_rmem"), "4096\t131072\t6291456\n");
  write(proc.file("sys/net/core/wmem_max"), "212992\n");
  write(proc.file("sys/net/ipv4/tcp_congestion_control"), "cubic\n");
  // Every sysctl in the facts' order, each with its value (none: no such file).
  std::vector<std::pair<std::string, std::optional<std::string>>> got;
  for (const msg::NamedValue& v : tcp_sysctl_facts(proc.path())) got.emplace_back(v.name, v.value);
  EXPECT_EQ(got, (decltype(got){{"net.ipv4.tcp_rmem", "4096 131072 6291456"},
                                {"net.ipv4.tcp_wmem", std::nullopt},
                                {"net.core.rmem_max", std::nullopt},
                                {"net.core.wmem_max", "212992"},
                                {"net.ipv4.tcp_congestion_control", "cubic"},
                                {"net.ipv4.tcp_window_scaling", std::nullopt},
                                {"net.ipv4.tcp_mtu_probing", std::nullopt}}));
}

TEST(Sysinfo, TcpSysctlsOfThisMachine) {
  const msg::NamedValues o = tcp_sysctl_facts();
  const std::string* found = msg::find_value(o, "net.ipv4.tcp_rmem");
  ASSERT_NE(found, nullptr);
  // Three numbers: min, default, max.
  const std::string rmem = *found;
  EXPECT_EQ(std::count(rmem.begin(), rmem.end(), ' '), 2) << rmem;
}

TEST(Sysinfo, ParseSambaGlobals) {
  const std::string conf =
      "# a comment\n"
      "[Global]\n"
      "   workgroup = LAB\n"
      "  SMB2   Max  Read = 1048576\n"
      "; aio read size = 1\n"
      "  server string = a long \\\n"
      "     name\n"
      "  aio read size = 16384\n"
      "  aio read size = 1\n"
      "[share]\n"
      "  path = /srv\n"
      "[global]\n"
      "  max xmit = 65535\n";
  const msg::NamedValues g = parse_samba_globals(conf);
  // In the text's order; a repeated parameter keeps its first place.
  std::vector<std::string> names;
  for (const auto& v : g) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"workgroup", "smb2 max read", "server string",
                                             "aio read size", "max xmit"}));
  EXPECT_EQ(g[0].value, "LAB");
  EXPECT_EQ(g[1].value, "1048576");
  EXPECT_EQ(g[2].value, "a long name");
  EXPECT_EQ(g[3].value, "1");      // the later line wins
  EXPECT_EQ(g[4].value, "65535");  // a second [global] adds to it
  EXPECT_TRUE(parse_samba_globals("[share]\npath = /x\n").empty());
}

TEST(Sysinfo, Sha256) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sysinfo, SambaFactsOfAGivenConfig) {
  TempDir dir;
  write(dir.file("smb.conf"),
        "[global]\n  smb2 max read = 65536\n  aio read size = 16384\n[data]\n  path = /tmp\n");
  const auto v = samba_facts(dir.file("smb.conf"));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->config_path, dir.file("smb.conf"));
  EXPECT_EQ(v->found_by, "plan");
  EXPECT_TRUE(v->error.empty()) << v->error;
  EXPECT_EQ(v->sha256.size(), 64u);
  // testparm (when installed) and the file agree on what the config sets
  // (testparm leaves out parameters at their default, e.g. smb2 max read = 8388608).
  ASSERT_NE(msg::find_value(v->global, "smb2 max read"), nullptr);
  EXPECT_EQ(*msg::find_value(v->global, "smb2 max read"), "65536");
  ASSERT_NE(msg::find_value(v->global, "aio read size"), nullptr);
  EXPECT_EQ(*msg::find_value(v->global, "aio read size"), "16384");
  const std::string first = v->sha256;
  // A changed parameter changes the hash.
  write(dir.file("smb.conf"),
        "[global]\n  smb2 max read = 4194304\n  aio read size = 16384\n[data]\n  path = /tmp\n");
  const auto w = samba_facts(dir.file("smb.conf"));
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->sha256, first);
  ASSERT_NE(msg::find_value(w->global, "smb2 max read"), nullptr);
  EXPECT_EQ(*msg::find_value(w->global, "smb2 max read"), "4194304");
}

// A parameter set under an older name (`smb encrypt`) in a file the config
// includes shows in no line of `testparm -s`; the facts hold its effective
// value under the canonical name, and defaults of the parameters asked.
TEST(Sysinfo, SambaFactsHoldEffectiveValuesThroughSynonymsAndIncludes) {
  TempDir dir;
  write(dir.file("extra.conf"), "smb encrypt = required\nsync always = yes\n");
  write(dir.file("smb.conf"),
        "[global]\n  include = " + dir.file("extra.conf") + "\n[data]\n  path = /tmp\n");
  const auto v = samba_facts(dir.file("smb.conf"));
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->source, "testparm");  // Debian's samba-common-bin is a build dependency
  auto value = [&](const char* name) {
    const auto* found = msg::find_value(v->global, name);
    return found ? *found : std::string("(absent)");
  };
  EXPECT_EQ(value("server smb encrypt"), "required");
  EXPECT_EQ(value("sync always"), "Yes");
  EXPECT_EQ(value("strict sync"), "Yes");  // Samba 4's default
  EXPECT_EQ(value("smb2 max read"), "8388608");
  for (const std::string& name : samba_parameters_asked()) {
    EXPECT_NE(msg::find_value(v->global, name), nullptr) << name;
  }
}

// A share sets costly values of its own apart from [global]: each share
// section keeps the parameters the verdict reads, and its path; [global]
// and [printers] are no share.
TEST(Sysinfo, SambaSharesKeepTheirOwnParametersAskedAndPath) {
  const auto shares = parse_samba_shares(
      "[global]\n\tsync always = No\n"
      "[Disk]\n\tpath = /srv/disk\n\tsync   ALWAYS = Yes\n\tcomment = not asked\n"
      "\tstrict sync = no\n"
      "[ram]\n\tpath = /srv/ram\n"
      "[printers]\n\tpath = /var/spool\n\tsync always = yes\n");
  ASSERT_EQ(shares.size(), 2u);
  const msg::NamedValues& disk = shares.at("disk");
  ASSERT_EQ(disk.size(), 3u);
  EXPECT_EQ(*msg::find_value(disk, "path"), "/srv/disk");
  EXPECT_EQ(*msg::find_value(disk, "sync always"), "Yes");
  EXPECT_EQ(*msg::find_value(disk, "strict sync"), "no");
  EXPECT_EQ(msg::find_value(disk, "comment"), nullptr);
  EXPECT_EQ(shares.at("ram").size(), 1u);
}

// Through testparm: a share's own `sync always` (set in a file its section
// includes) is in that share's facts under the canonical name; a share that
// sets nothing apart from [global] holds its path alone.
TEST(Sysinfo, SambaFactsHoldEachSharesOwnValues) {
  TempDir dir;
  write(dir.file("disk.conf"), "sync always = yes\n");
  write(dir.file("smb.conf"), "[global]\n  strict sync = yes\n[disk]\n  path = /tmp\n  include = " +
                                  dir.file("disk.conf") + "\n[ram]\n  path = /tmp\n");
  const auto v = samba_facts(dir.file("smb.conf"));
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->source, "testparm");
  ASSERT_EQ(v->shares.count("disk"), 1u);
  const std::string* sync = msg::find_value(v->shares.at("disk"), "sync always");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(*sync, "Yes");
  ASSERT_EQ(v->shares.count("ram"), 1u);
  EXPECT_EQ(msg::find_value(v->shares.at("ram"), "sync always"), nullptr);
  EXPECT_NE(msg::find_value(v->shares.at("ram"), "path"), nullptr);
}

TEST(Sysinfo, MergeSambaEffectiveSetsAndAppendsOnlyTheParametersAsked) {
  msg::NamedValues global = {{"workgroup", std::string("LAB")}, {"sync always", std::string("no")}};
  merge_samba_effective(global, {{"workgroup", std::string("OTHER")},
                                 {"sync always", std::string("Yes")},
                                 {"server smb encrypt", std::string("required")},
                                 {"log level", std::string("1")}});
  ASSERT_EQ(global.size(), 3u);
  EXPECT_EQ(global[0].value, "LAB");  // not asked: as the config says
  EXPECT_EQ(global[1].value, "Yes");
  EXPECT_EQ(global[2].name, "server smb encrypt");
  EXPECT_EQ(global[2].value, "required");
}

TEST(Sysinfo, SambaFactsOfAMissingConfig) {
  const auto v = samba_facts("/no/such/smb.conf");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->config_path, "/no/such/smb.conf");
  EXPECT_FALSE(v->error.empty());
  EXPECT_TRUE(v->global.empty());
}

TEST(SambaConfig, FromTheRunningSmbdsCommandLine) {
  using namespace std::string_literals;
  EXPECT_EQ(smbd_config_from_cmdline("/usr/sbin/smbd\0-D\0-s\0/lab/smb.conf\0"s), "/lab/smb.conf");
  EXPECT_EQ(smbd_config_from_cmdline("smbd\0-s/x/smb.conf\0"s), "/x/smb.conf");
  EXPECT_EQ(smbd_config_from_cmdline("smbd\0--configfile=/y.conf\0"s), "/y.conf");
  EXPECT_EQ(smbd_config_from_cmdline("smbd\0--foreground\0--configfile\0/z.conf"s), "/z.conf");
  EXPECT_EQ(smbd_config_from_cmdline("smbd\0-D\0"s), "");
  EXPECT_EQ(smbd_config_from_cmdline(""), "");
}

TEST(SambaConfig, PlanFirstThenTheRunningSmbd) {
  TempDir dir;
  std::string how;
  EXPECT_EQ(samba_config_path("/etc/x.conf", &how, dir.path()), "/etc/x.conf");
  EXPECT_EQ(how, "plan");
  // A fake /proc with one smbd started with -s.
  ::mkdir((dir.path() + "/77").c_str(), 0755);
  std::ofstream(dir.path() + "/77/comm") << "smbd\n";
  std::ofstream(dir.path() + "/77/cmdline") << std::string("smbd\0-s\0/nas/etc/smb.conf\0", 27);
  std::ofstream(dir.path() + "/77/status") << "Name:\tsmbd\nUid:\t0\t0\t0\t0\n";
  std::filesystem::create_symlink(installed_smbd_paths().at(0), dir.path() + "/77/exe");
  ::mkdir((dir.path() + "/78").c_str(), 0755);
  std::ofstream(dir.path() + "/78/comm") << "bash\n";
  bool here = true;
  EXPECT_EQ(samba_config_path("", &how, dir.path(), &here), "/nas/etc/smb.conf");
  EXPECT_EQ(how, "running smbd (pid 77)");
  // Its namespace is not known to be this one: Samba is not served here.
  EXPECT_FALSE(here);
  samba_config_path("/etc/x.conf", &how, dir.path(), &here);
  EXPECT_TRUE(here);
  // In this network namespace (the links' targets are what readlink gives): served here.
  std::filesystem::create_directories(dir.path() + "/self/ns");
  std::filesystem::create_directories(dir.path() + "/77/ns");
  std::filesystem::create_symlink("net:[4026531840]", dir.path() + "/self/ns/net");
  std::filesystem::create_symlink("net:[4026531840]", dir.path() + "/77/ns/net");
  samba_config_path("", &how, dir.path(), &here);
  EXPECT_TRUE(here);
}

// A fake /proc holding two processes named smbd: root's real binary, and a
// user's own copy started with `-s ~/x/smb.conf` (one of them as root's
// real uid but another exe, one as the user with the real exe): only the
// real one's config is taken.
TEST(SecuritySmbdIdentity, OnlyRootsRealSmbdNamesTheConfig) {
  if (installed_smbd_paths().empty()) GTEST_SKIP() << "no smbd installed";
  const std::string real = installed_smbd_paths().at(0);
  TempDir dir;
  auto proc = [&](int pid, const std::string& uid, const std::string& exe,
                  const std::string& conf) {
    const std::string d = dir.path() + "/" + std::to_string(pid);
    ::mkdir(d.c_str(), 0755);
    std::ofstream(d + "/comm") << "smbd\n";
    const std::string cmd = std::string("smbd\0-s\0", 8) + conf + std::string(1, '\0');
    std::ofstream(d + "/cmdline") << cmd;
    std::ofstream(d + "/status") << "Name:\tsmbd\nUid:\t" << uid << "\t" << uid << "\t" << uid
                                 << "\t" << uid << "\n";
    std::filesystem::create_symlink(exe, d + "/exe");
  };
  const std::string copy = dir.path() + "/home-smbd";
  std::filesystem::copy_file(real, copy);
  proc(10, "1000", real, "/home/u/x/smb.conf");  // the user's, running the real binary
  proc(11, "0", copy, "/home/u/y/smb.conf");     // root's uid, not the real binary
  std::string how;
  EXPECT_NE(samba_config_path("", &how, dir.path()), "/home/u/x/smb.conf");
  EXPECT_NE(samba_config_path("", &how, dir.path()), "/home/u/y/smb.conf");
  EXPECT_EQ(how.rfind("running smbd", 0), std::string::npos) << how;
  EXPECT_FALSE(is_real_smbd(dir.path(), 10, installed_smbd_paths()));
  EXPECT_FALSE(is_real_smbd(dir.path(), 11, installed_smbd_paths()));
  proc(12, "0", real, "/etc/samba/real.conf");
  EXPECT_TRUE(is_real_smbd(dir.path(), 12, installed_smbd_paths()));
  EXPECT_EQ(samba_config_path("", &how, dir.path()), "/etc/samba/real.conf");
  EXPECT_EQ(how, "running smbd (pid 12)");
}

// A real child process named smbd that is not the real binary (a copy of
// sleep renamed smbd, run by this user): never taken for Samba.
TEST(SecuritySmbdIdentity, ARealChildNamedSmbdIsIgnored) {
  TempDir dir;
  const std::string fake = dir.path() + "/smbd";
  std::filesystem::copy_file("/bin/sleep", fake);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(fake.c_str(), "smbd", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{pid};
  // Its comm is "smbd" once exec'd (the file's name).
  std::string comm;
  for (int i = 0; i < 200 && trim(comm) != "smbd"; ++i) {
    ::usleep(10000);
    read_file(fmt::format("/proc/{}/comm", pid), &comm);
  }
  ASSERT_EQ(trim(comm), "smbd");
  EXPECT_FALSE(is_real_smbd("/proc", pid, installed_smbd_paths()));
}

// A fake /proc with two smbd instances, each started with its own config,
// and a per-client child of the first: each instance is listed once (the
// child is its parent's), with its pid, its config and that config's own
// effective values.
TEST(SambaConfig, EachRunningSmbdIsListedWithItsOwnConfig) {
  const std::string real = installed_smbd_paths().at(0);
  TempDir dir;
  write(dir.file("a.conf"), "[global]\n  smb2 max read = 262144\n[data]\n  path = /tmp\n");
  write(dir.file("b.conf"), "[global]\n  smb2 max read = 65536\n[data]\n  path = /tmp\n");
  const std::string proc = dir.path() + "/proc";
  auto smbd = [&](int pid, int ppid, const std::string& conf) {
    const std::string d = proc + "/" + std::to_string(pid);
    std::filesystem::create_directories(d);
    std::ofstream(d + "/comm") << "smbd\n";
    std::ofstream(d + "/cmdline") << std::string("smbd\0-s\0", 8) + conf + std::string(1, '\0');
    std::ofstream(d + "/status") << "Name:\tsmbd\nUid:\t0\t0\t0\t0\n";
    std::ofstream(d + "/stat") << pid << " (smbd) S " << ppid
                               << " 1 1 0 -1 4194560 0 0 0 0 3 4 0 0 20 0 1 0 100 0 0\n";
    std::filesystem::create_symlink(real, d + "/exe");
  };
  smbd(40, 1, dir.file("a.conf"));
  smbd(41, 40, dir.file("a.conf"));  // a client's: the instance of 40
  smbd(50, 1, dir.file("b.conf"));
  const std::vector<msg::SambaFacts> v = samba_instances(proc);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].pid, 40);
  EXPECT_EQ(v[0].config_path, dir.file("a.conf"));
  EXPECT_EQ(v[0].found_by, "running smbd");  // its pid is `pid`
  EXPECT_EQ(v[1].pid, 50);
  EXPECT_EQ(v[1].config_path, dir.file("b.conf"));
  for (const auto& [i, value] : {std::pair{0, "262144"}, std::pair{1, "65536"}}) {
    EXPECT_TRUE(v[i].error.empty()) << v[i].error;
    ASSERT_NE(msg::find_value(v[i].global, "smb2 max read"), nullptr) << i;
    EXPECT_EQ(*msg::find_value(v[i].global, "smb2 max read"), value);
  }
  // The JSON keeps each instance's pid.
  msg::Facts f;
  f.samba_instances = v;
  const json::value j = msg::to_json(f);
  msg::Facts back;
  msg::from_json(j, back, msg::Source::kStored, "facts");
  ASSERT_EQ(back.samba_instances.size(), 2u);
  EXPECT_EQ(back.samba_instances[1].pid, 50);
  EXPECT_EQ(back.samba_instances[1].config_path, dir.file("b.conf"));
}

}  // namespace
}  // namespace cp::probe
