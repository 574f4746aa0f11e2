#include "probe/platform.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "probe/sysinfo.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

using testing::TempDir;

// An excerpt of a real OpenZFS 2.1 /proc/spl/kstat/zfs/arcstats (kstat header,
// then "name type data" rows; 4 = KSTAT_DATA_UINT64).
constexpr const char* kArcstats =
    "13 1 0x01 123 33456 4573448542 1026418416658\n"
    "name                            type data\n"
    "hits                            4    2375012\n"
    "misses                          4    41536\n"
    "p                               4    2054190592\n"
    "c                               4    4108381184\n"
    "c_min                           4    520380416\n"
    "c_max                           4    8326086656\n"
    "size                            4    3991658088\n"
    "compressed_size                 4    3644213760\n";

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(Zfs, ArcstatsGiveTheArcsSizeAndCeiling) {
  const std::optional<os::ArcStats> a = os::parse_arcstats(kArcstats);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->c_max, 8326086656u);
  EXPECT_EQ(a->c, 4108381184u);
  EXPECT_EQ(a->size, 3991658088u);
  // c_min is not c_max; text without c_max is no ARC.
  EXPECT_FALSE(os::parse_arcstats("name type data\nc_min 4 5\nsize 4 7\n").has_value());
  EXPECT_FALSE(os::parse_arcstats("").has_value());
}

TEST(Zfs, FactsOfAZfsDiskDirNameTheArcFromProc) {
  TempDir proc;
  write(proc.file("spl/kstat/zfs/arcstats"), kArcstats);
  const auto z = zfs_facts("zfs", proc.path());
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->arc_c_max_bytes, 8326086656u);
  EXPECT_EQ(z->arc_size_bytes, 3991658088u);
  // ZFS without a readable arcstats: the figures are unknown, not zero.
  TempDir empty;
  const auto unknown = zfs_facts("zfs", empty.path());
  ASSERT_TRUE(unknown.has_value());
  EXPECT_FALSE(unknown->arc_c_max_bytes.has_value());
  // Any other filesystem has no ZFS facts.
  EXPECT_FALSE(zfs_facts("ext4", proc.path()).has_value());
}

TEST(CacheVerdict, ZfsReadsAreCachePossibleUnlessLargerThanTheArcCeiling) {
  const uint64_t c_max = 8ull << 30;
  // O_DIRECT or not, ZFS keeps the ARC: only a file beyond c_max is uncached.
  EXPECT_TRUE(os::read_cache_verdict("zfs", true, 1ull << 30, c_max).cache_possible);
  EXPECT_FALSE(os::read_cache_verdict("zfs", true, 1ull << 30, c_max).reason.empty());
  EXPECT_TRUE(os::read_cache_verdict("zfs", false, c_max, c_max).cache_possible);
  EXPECT_FALSE(os::read_cache_verdict("zfs", true, c_max + 1, c_max).cache_possible);
  EXPECT_TRUE(os::read_cache_verdict("zfs", true, c_max + 1, c_max).reason.empty());
  // An unknown ceiling proves nothing.
  EXPECT_TRUE(os::read_cache_verdict("zfs", true, 1ull << 40, 0).cache_possible);
  // Elsewhere O_DIRECT bypasses the cache and the fadvise fallback may not.
  EXPECT_FALSE(os::read_cache_verdict("ext4", true, 1ull << 20, 0).cache_possible);
  EXPECT_TRUE(os::read_cache_verdict("ext4", false, 1ull << 20, 0).cache_possible);
}

std::vector<std::string> names(const std::vector<os::DegradedFact>& d) {
  std::vector<std::string> n;
  for (const auto& f : d) n.push_back(f.fact);
  return n;
}

TEST(Degraded, RootOnExt4WithoutSambaDegradesNothing) {
  os::PrivilegeContext c;
  c.root = true;
  c.disk_fs_type = "ext4";
  EXPECT_TRUE(os::degraded_facts(c).empty());
}

TEST(Degraded, ZfsDiskAndMissingSmbstatusAreNamedWithThePrivilegeThatRestoresThem) {
  os::PrivilegeContext c;
  c.root = true;
  c.disk_fs_type = "zfs";
  c.arc = os::parse_arcstats(kArcstats);
  c.samba = true;
  c.smbstatus_found = false;
  const std::vector<os::DegradedFact> d = os::degraded_facts(c);
  EXPECT_EQ(names(d), (std::vector<std::string>{"smb_negotiated", "disk_cache_bypass"}));
  for (const auto& f : d) {
    EXPECT_FALSE(f.method.empty()) << f.fact;
    EXPECT_FALSE(f.privilege.empty()) << f.fact;
  }
  // smbstatus that ran is no degradation.
  c.smbstatus_found = c.smbstatus_ok = true;
  EXPECT_EQ(names(os::degraded_facts(c)), (std::vector<std::string>{"disk_cache_bypass"}));
}

// What `body` returns, run in a forked child (so it may drop root or unshare
// a namespace); body may _exit(N) for a failed step, which fails the test.
void in_child(const std::function<std::string()>& body, std::string* out) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    const std::string text = body();
    (void)!::write(fds[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out->append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// In a child that dropped root for nobody (65534): pid 1's namespace link is
// not its to read, and smbstatus (installed here with Samba) is refused.
TEST(Degraded, WithoutRootOtherUsersNamespacesAndSmbstatusDegrade) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(in_child(
      [] {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
        const os::PrivilegeContext c =
            os::privilege_context("ext4", true, "/nonexistent/chokepoint/smb.conf");
        std::string text = c.root ? "root" : "user";
        for (const auto& f : os::degraded_facts(c)) text += " " + f.fact;
        return text;
      },
      &out));
  EXPECT_EQ(out, "user process_netns smb_negotiated");
}

TEST(Degraded, FactsCarryTheListAndTheAgentsUid) {
  TempDir d;
  FactsRequest r;
  r.disk_dir = d.path();
  const msg::Facts f = collect_facts(r);
  EXPECT_EQ(f.euid, static_cast<uint64_t>(::geteuid()));
  for (const msg::DegradedFact& e : f.degraded) EXPECT_FALSE(e.privilege.empty()) << e.fact;
  // The disk dir is not ZFS here.
  ASSERT_TRUE(f.disk_dir.has_value());
  EXPECT_TRUE(f.disk_dir->with_device);
  EXPECT_FALSE(f.disk_dir->zfs.has_value());
}

TEST(CoreTimes, ReadFromProcStat) {
  TempDir proc;
  write(proc.file("stat"),
        "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 4 0 6 40 0 0 0 0 0 0\ncpu1 6 0 4 40 0 0 0 0 0 0\n");
  const std::vector<CpuTimes> c = os::read_core_times(proc.path());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].busy, 10u);
  EXPECT_EQ(c[0].total, 50u);
  TempDir empty;
  EXPECT_TRUE(os::read_core_times(empty.path()).empty());
}

// In a child in a network namespace of its own: its loopback shaped by tbf,
// then by an htb root class, read back from the kernel without tc.
TEST(ShapedRate, TbfAndHtbRatesComeFromTheKernel) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(in_child(
      [] {
        if (::unshare(CLONE_NEWNET) != 0) ::_exit(3);
        auto sh = [](const char* cmd) { return std::system(cmd) == 0; };
        auto rate = [](const std::string& ifname) {
          const std::optional<uint64_t> r = os::shaped_rate_bits(ifname);
          return r ? std::to_string(*r) : std::string("none");
        };
        std::string text = rate("lo");
        if (!sh("ip link set lo up && tc qdisc add dev lo root tbf rate 200mbit burst 100k "
                "latency 50ms")) {
          ::_exit(4);
        }
        text += " " + rate("lo");
        if (!sh("tc qdisc replace dev lo root handle 1: htb && tc class add dev lo parent 1: "
                "classid 1:1 htb rate 300mbit")) {
          ::_exit(5);
        }
        text += " " + rate("lo") + " " + rate("no-such-if");
        return text;
      },
      &out));
  EXPECT_EQ(out, "none 200000000 300000000 none");
}

}  // namespace
}  // namespace cp::probe
