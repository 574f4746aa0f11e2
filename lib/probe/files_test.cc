#include "probe/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/testing/error_of.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

using cp::testing::kind_of;
using files::Phase;
using testing::TempDir;

// A small tmpfs mounted in a fresh directory (the tests run as root), unmounted after.
class Tmpfs {
 public:
  explicit Tmpfs(const char* size = "size=64m") : mnt_(dir_.file("mnt")) {
    ::mkdir(mnt_.c_str(), 0755);
    mounted_ = ::mount("tmpfs", mnt_.c_str(), "tmpfs", 0, size) == 0;
    fd_ = ::open(mnt_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Tmpfs() {
    ::close(fd_);
    if (mounted_) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  int fd() const { return fd_; }
  const std::string& path() const { return mnt_; }
  // Entries under the mount, recursively.
  size_t entries() const {
    size_t n = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(mnt_);
         it != std::filesystem::recursive_directory_iterator(); ++it) {
      ++n;
    }
    return n;
  }

 private:
  TempDir dir_;
  std::string mnt_;
  bool mounted_ = false;
  int fd_ = -1;
};

FilesOptions small(uint64_t count, uint64_t size, uint64_t dirs) {
  FilesOptions o;
  o.tree.count = count;
  o.tree.size = size;
  o.tree.dirs = dirs;
  o.budget = 0;
  return o;
}

TEST(FilesPass, CountsEveryOperationOfEachPhaseAndLeavesNothingOnTmpfs) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted()) << std::strerror(errno);
  CancelToken cancel;
  const FilesPassResult r = files_pass(fs.fd(), fs.path(), "pass", small(300, 4096, 7), cancel, {});
  ASSERT_EQ(r.phases.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    const files::PhaseStats& p = r.phases[k].stats;
    EXPECT_EQ(p.phase, files::kPhases[k]);
    EXPECT_EQ(p.ops, 300u) << files::phase_name(p.phase);
    EXPECT_GT(p.seconds, 0);
    EXPECT_FALSE(p.budget_hit);
    EXPECT_GT(p.ops_per_second(), 0);
  }
  EXPECT_EQ(r.phases[0].stats.bytes, 300u * 4096);  // create
  EXPECT_EQ(r.phases[1].stats.bytes, 0u);           // stat
  EXPECT_EQ(r.phases[2].stats.bytes, 300u * 4096);  // read
  EXPECT_EQ(r.phases[3].stats.bytes, 0u);           // delete
  EXPECT_EQ(r.fs_type, "tmpfs");
  EXPECT_TRUE(r.cache_possible);  // tmpfs: no read of it is cold
  EXPECT_EQ(fs.entries(), 0u);    // every file and directory, and the pass's root, gone
}

TEST(FilesPass, CpuIsSampledPerPhase) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  CancelToken cancel;
  const FilesPassResult r = files_pass(fs.fd(), fs.path(), "pass", small(200, 0, 2), cancel, {});
  for (const auto& p : r.phases)
    EXPECT_FALSE(p.cpu.core_busy_pct.empty()) << files::phase_name(p.stats.phase);
}

TEST(FilesPass, LatencyPercentilesAreOrderedAndWithinThePhase) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  CancelToken cancel;
  const FilesPassResult r = files_pass(fs.fd(), fs.path(), "pass", small(500, 1024, 5), cancel, {});
  for (const auto& p : r.phases) {
    const files::Latency& l = p.stats.latency;
    EXPECT_GT(l.median_us, 0) << files::phase_name(p.stats.phase);
    EXPECT_LE(l.median_us, l.p99_us);
    EXPECT_LE(l.p99_us, l.max_us);
    // No operation took longer than its whole phase.
    EXPECT_LE(l.max_us, p.stats.seconds * 1e6 * 1.04);
  }
}

TEST(FilesPass, BudgetStopsEachPhaseOnceATenthOfTheFilesIsIn) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  FilesOptions o = small(2000, 512, 10);
  o.budget = 1e-9;  // past as soon as the pass starts
  CancelToken cancel;
  const FilesPassResult r = files_pass(fs.fd(), fs.path(), "pass", o, cancel, {});
  for (const auto& p : r.phases) {
    EXPECT_EQ(p.stats.ops, 200u) << files::phase_name(p.stats.phase);  // count / 10
    EXPECT_TRUE(p.stats.budget_hit);
  }
  EXPECT_EQ(fs.entries(), 0u);  // the delete phase stopped, the rest removed after it
}

TEST(FilesPass, SequentialIsDirectoryMajorAndRandomASeededPermutationPerPhase) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  auto orders = [&](bool random, uint64_t seed) {
    FilesOptions o = small(200, 0, 4);
    o.random = random;
    o.seed = seed;
    std::map<Phase, std::vector<uint64_t>> seen;
    o.on_op = [&](Phase p, uint64_t i) { seen[p].push_back(i); };
    CancelToken cancel;
    files_pass(fs.fd(), fs.path(), "pass", o, cancel, {});
    return seen;
  };
  const auto seq = orders(false, 0);
  const auto rnd = orders(true, 42);
  std::vector<uint64_t> ascending(200);
  for (uint64_t i = 0; i < 200; ++i) ascending[i] = i;
  // Sequential: a directory at a time (d0000's files 0, 4, 8, .., then d0001's).
  const std::vector<uint64_t> by_dir = files::directory_order({200, 0, 4});
  ASSERT_EQ(std::vector<uint64_t>(by_dir.begin(), by_dir.begin() + 3),
            (std::vector<uint64_t>{0, 4, 8}));
  for (Phase p : files::kPhases) {
    EXPECT_EQ(seq.at(p), by_dir) << files::phase_name(p);
    EXPECT_NE(rnd.at(p), ascending) << files::phase_name(p);
    std::vector<uint64_t> sorted = rnd.at(p);
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, ascending) << files::phase_name(p);  // each file once
  }
  EXPECT_NE(rnd.at(Phase::create), rnd.at(Phase::stat));
  EXPECT_EQ(orders(true, 42), rnd);  // the same seed, the same orders
  EXPECT_NE(orders(true, 43).at(Phase::create), rnd.at(Phase::create));
}

TEST(FilesPass, FileNameIsTheTreesNameWithoutItsDirectory) {
  const files::Tree t{2000000, 0, 10};
  for (uint64_t i : {0ull, 7ull, 13ull, 99999ull, 999999ull, 1000000ull, 1234567ull}) {
    const std::string path = t.file_path(i);
    EXPECT_EQ(FileName(i).c_str(), path.substr(path.find('/') + 1)) << i;
  }
}

TEST(FilesPass, CreateKeepsItsSyncfsTimeApartAndOnlyCreateHasOne) {
  TempDir dir;  // the test host's disk: a syncfs there takes measurable time
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  CancelToken cancel;
  const FilesPassResult r =
      files_pass(fd, dir.path(), "pass", small(200, 4096, 4), cancel, {}, false);
  ::close(fd);
  ASSERT_EQ(r.phases.size(), 4u);
  const files::PhaseStats& create = r.phases[0].stats;
  EXPECT_GT(create.sync_seconds, 0);
  EXPECT_LT(create.sync_seconds, create.seconds);  // part of the phase's time
  for (size_t k = 1; k < 4; ++k) EXPECT_EQ(r.phases[k].stats.sync_seconds, 0) << k;
}

TEST(FilesPass, CancelRemovesWhatThePassMade) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  FilesOptions o = small(100, 100, 3);
  CancelToken cancel;
  o.on_op = [&](Phase p, uint64_t i) {
    if (p == Phase::stat && i == 50) cancel.cancel();
  };
  EXPECT_EQ(kind_of([&] { files_pass(fs.fd(), fs.path(), "pass", o, cancel, {}); }),
            ErrorKind::kCancelled)
      << "not cancelled";
  EXPECT_EQ(fs.entries(), 0u);
}

TEST(FilesPass, NoSpaceIsAnIoErrorAndRemovesWhatThePassMade) {
  Tmpfs fs("size=1m");
  ASSERT_TRUE(fs.mounted());
  CancelToken cancel;
  EXPECT_EQ(kind_of([&] {
              files_pass(fs.fd(), fs.path(), "pass", small(1000, 64 << 10, 10), cancel, {});
            }),
            ErrorKind::kIo)
      << "no ENOSPC";
  EXPECT_EQ(fs.entries(), 0u);
}

TEST(FilesPass, BadTreeIsAConfigError) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  CancelToken cancel;
  for (const FilesOptions& o :
       {small(0, 10, 1), small(10, 10, 0), small(10, 10, 11), small(10, kMaxFilesSize + 1, 1)}) {
    EXPECT_EQ(kind_of([&] { files_pass(fs.fd(), fs.path(), "pass", o, cancel, {}); }),
              ErrorKind::kConfig)
        << o.tree.count << " " << o.tree.dirs << " " << o.tree.size;
  }
  EXPECT_EQ(fs.entries(), 0u);
}

// An attacker who can write the parent (a shared run directory) plants the
// pass's root as a link: the pass refuses it and the target is untouched.
TEST(FilesPass, PlantedRootLinkIsRefusedAndItsTargetUntouched) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  TempDir victim;
  ASSERT_EQ(::symlink(victim.path().c_str(), (fs.path() + "/pass").c_str()), 0);
  CancelToken cancel;
  EXPECT_EQ(kind_of([&] { files_pass(fs.fd(), fs.path(), "pass", small(10, 10, 1), cancel, {}); }),
            ErrorKind::kIo)
      << "followed the link";
  EXPECT_TRUE(std::filesystem::is_empty(victim.path()));
  EXPECT_TRUE(std::filesystem::is_symlink(fs.path() + "/pass"));  // not ours: left alone
}

// A link planted inside the tree (by someone who got into it) at a name the
// create phase is about to use: refused (O_EXCL|O_NOFOLLOW), its target
// untouched, everything the pass made removed and the link left.
TEST(FilesPass, LinkPlantedInTheTreeIsRefusedAndOnlyThePassFilesRemoved) {
  Tmpfs fs;
  ASSERT_TRUE(fs.mounted());
  TempDir victim;
  const std::string target = victim.file("precious");
  std::ofstream(target) << "keep";
  FilesOptions o = small(20, 100, 2);
  o.on_op = [&](Phase p, uint64_t i) {
    if (p == Phase::create && i == 10) {
      ::symlink(target.c_str(), (fs.path() + "/pass/d0000/f000012").c_str());
    }
  };
  CancelToken cancel;
  EXPECT_EQ(kind_of([&] { files_pass(fs.fd(), fs.path(), "pass", o, cancel, {}); }), ErrorKind::kIo)
      << "wrote through the link";
  EXPECT_EQ(std::filesystem::file_size(target), 4u);
  EXPECT_TRUE(std::filesystem::is_symlink(fs.path() + "/pass/d0000/f000012"));
  EXPECT_EQ(fs.entries(), 3u);  // pass, pass/d0000 and the planted link: nothing of ours
}

}  // namespace
}  // namespace cp::probe
