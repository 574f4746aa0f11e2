#include "probe/disk.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "core/error.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

long max_rss_kib() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

TEST(Disk, WriteThenReadWithUnalignedTail) {
  TempDir dir;
  const std::string path = dir.file("f");
  const uint64_t size = 3 * kDefaultDiskBlock + 1000;  // tail not a multiple of 4 KiB
  CancelToken cancel;
  DiskResult w = disk_write(path, size, kDefaultDiskBlock, cancel, nullptr);
  EXPECT_EQ(w.bytes, size);
  EXPECT_EQ(file_size(path), size);
  EXPECT_GT(w.seconds, 0);
  EXPECT_EQ(w.cache_possible, !w.direct);
  EXPECT_EQ(w.method, w.direct ? "O_DIRECT" : "fsync+fadvise");
  std::string type = fs_type(dir.path());
  if (type == "ext4" || type == "xfs" || type == "btrfs") {
    EXPECT_TRUE(w.direct) << type;
  }

  DiskResult r = disk_read(path, kDefaultDiskBlock, cancel, nullptr);
  EXPECT_EQ(r.bytes, size);
  EXPECT_EQ(r.cache_possible, !r.direct);
  if (type == "ext4" || type == "xfs" || type == "btrfs") {
    EXPECT_TRUE(r.direct) << type;
  }
}

TEST(Disk, PatternIsDenseAndUniquePer4KiB) {
  TempDir dir;
  const std::string path = dir.file("f");
  const uint64_t size = 2 * kDefaultDiskBlock;
  CancelToken cancel;
  disk_write(path, size, kDefaultDiskBlock, cancel, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, size) << "file is sparse";
  std::string data = slurp(path);
  ASSERT_EQ(data.size(), size);
  std::set<std::string> chunks;
  const std::string zeros(kDiskAlign, '\0');
  for (size_t i = 0; i < data.size(); i += kDiskAlign) {
    std::string chunk = data.substr(i, kDiskAlign);
    EXPECT_NE(chunk, zeros) << "chunk at " << i;
    chunks.insert(std::move(chunk));
  }
  EXPECT_EQ(chunks.size(), size / kDiskAlign) << "repeated 4 KiB chunks";
  // Two files never share chunks either (a per-file nonce).
  const std::string path2 = dir.file("g");
  disk_write(path2, kDiskAlign, kDiskAlign, cancel, nullptr);
  EXPECT_EQ(chunks.count(slurp(path2)), 0u);
}

TEST(Disk, BufferedFallbackWhenDirectIsNotAllowed) {
  TempDir dir;
  const std::string path = dir.file("f");
  CancelToken cancel;
  DiskResult w = disk_write(path, 1 << 20, 64 << 10, cancel, nullptr, /*allow_direct=*/false);
  EXPECT_FALSE(w.direct);
  EXPECT_TRUE(w.cache_possible);
  EXPECT_EQ(w.method, "fsync+fadvise");
  EXPECT_EQ(file_size(path), 1u << 20);
  DiskResult r = disk_read(path, 64 << 10, cancel, nullptr, /*allow_direct=*/false);
  EXPECT_EQ(r.bytes, 1u << 20);
  EXPECT_TRUE(r.cache_possible);
}

TEST(Disk, SmallAndEmptyFiles) {
  TempDir dir;
  CancelToken cancel;
  DiskResult w = disk_write(dir.file("small"), 100, kDefaultDiskBlock, cancel, nullptr);
  EXPECT_EQ(w.bytes, 100u);
  EXPECT_EQ(file_size(dir.file("small")), 100u);
  EXPECT_EQ(disk_read(dir.file("small"), kDefaultDiskBlock, cancel, nullptr).bytes, 100u);
  DiskResult e = disk_write(dir.file("empty"), 0, kDefaultDiskBlock, cancel, nullptr);
  EXPECT_EQ(e.bytes, 0u);
  EXPECT_TRUE(exists(dir.file("empty")));
  EXPECT_EQ(disk_read(dir.file("empty"), kDefaultDiskBlock, cancel, nullptr).bytes, 0u);
}

TEST(Disk, NeverOverwrites) {
  TempDir dir;
  const std::string path = dir.file("precious");
  { std::ofstream(path) << "keep me"; }
  CancelToken cancel;
  try {
    disk_write(path, 1 << 20, kDefaultDiskBlock, cancel, nullptr);
    FAIL() << "overwrote an existing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(EEXIST)), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
  EXPECT_EQ(slurp(path), "keep me");
}

TEST(Disk, BadBlockSizeIsAConfigError) {
  TempDir dir;
  CancelToken cancel;
  for (uint32_t block : {0u, 1000u, kMaxDiskBlock + kDiskAlign}) {
    try {
      disk_write(dir.file("f"), 1 << 20, block, cancel, nullptr);
      FAIL() << block;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    }
    EXPECT_FALSE(exists(dir.file("f")));
  }
}

TEST(Disk, MissingFileIsAnIoError) {
  TempDir dir;
  CancelToken cancel;
  try {
    disk_read(dir.file("nope"), kDefaultDiskBlock, cancel, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
  EXPECT_THROW(disk_write(dir.file("no/such/dir"), 1, kDiskAlign, cancel, nullptr), Error);
}

TEST(Disk, CancelBeforeStartCreatesNothing) {
  TempDir dir;
  CancelToken cancel;
  cancel.cancel();
  try {
    disk_write(dir.file("f"), 1 << 20, kDefaultDiskBlock, cancel, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  EXPECT_FALSE(exists(dir.file("f")));
}

TEST(Disk, CancelMidwayRemovesThePartialFile) {
  TempDir dir;
  const std::string path = dir.file("f");
  CancelToken cancel;
  std::atomic<bool> done{false};
  // Cancels once the writer has put at least one block on disk: 4 KiB writes of a
  // 1 GiB file take seconds, so the cancel lands midway.
  std::thread watcher([&] {
    while (!done.load() && file_size(path) < 2 * kDiskAlign) usleep(500);
    cancel.cancel();
  });
  try {
    disk_write(path, 1ull << 30, kDiskAlign, cancel, nullptr);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  done = true;
  watcher.join();
  EXPECT_FALSE(exists(path));
}

TEST(Disk, NoSpaceIsAnIoErrorAndRemovesTheFile) {
  TempDir dir;
  const std::string mnt = dir.file("mnt");
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs: " << std::strerror(errno);
  }
  CancelToken cancel;
  for (bool allow_direct : {true, false}) {
    const std::string path = mnt + "/f";
    try {
      disk_write(path, 8 << 20, 256 << 10, cancel, nullptr, allow_direct);
      ADD_FAILURE() << "no ENOSPC";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo);
      EXPECT_NE(std::string(e.what()).find(std::strerror(ENOSPC)), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("free space"), std::string::npos);
    }
    EXPECT_FALSE(exists(path));
  }
  ::umount2(mnt.c_str(), MNT_DETACH);
}

TEST(Disk, MemoryStaysBoundedAndProgressIsSane) {
  TempDir dir;
  const std::string path = dir.file("big");
  const uint64_t size = 256ull << 20;
  CancelToken cancel;
  const long before = max_rss_kib();
  uint64_t last_bytes = 0;
  bool progress_ok = true;
  ProgressFn progress = [&](uint64_t bytes, double seconds) {
    if (bytes < last_bytes || bytes > size || seconds <= 0) progress_ok = false;
    last_bytes = bytes;
  };
  // Each transfer counts from zero again.
  EXPECT_EQ(disk_write(path, size, kDefaultDiskBlock, cancel, progress).bytes, size);
  last_bytes = 0;
  EXPECT_EQ(disk_read(path, kDefaultDiskBlock, cancel, progress).bytes, size);
  ::unlink(path.c_str());
  last_bytes = 0;
  EXPECT_EQ(disk_write(path, size, kDefaultDiskBlock, cancel, progress, false).bytes, size);
  last_bytes = 0;
  EXPECT_EQ(disk_read(path, kDefaultDiskBlock, cancel, progress, false).bytes, size);
  const long growth_kib = max_rss_kib() - before;
  EXPECT_LT(growth_kib, 8 * 1024) << "peak RSS grew by " << growth_kib << " KiB";
  EXPECT_TRUE(progress_ok);
}

TEST(Disk, FsSpaceAndType) {
  TempDir dir;
  FsSpace s = fs_space(dir.path());
  EXPECT_GT(s.total, 0u);
  EXPECT_LE(s.avail, s.total);
  EXPECT_THROW(fs_space(dir.file("nope")), Error);
  EXPECT_EQ(fs_type("/proc"), "proc");
  if (exists("/dev/shm")) {
    EXPECT_EQ(fs_type("/dev/shm"), "tmpfs");
  }
  EXPECT_FALSE(fs_type(dir.path()).empty());
  EXPECT_THROW(fs_type(dir.file("nope")), Error);

  const std::string mnt = dir.file("t");
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") == 0) {
    EXPECT_EQ(fs_type(mnt), "tmpfs");
    ::mkdir((mnt + "/sub").c_str(), 0755);
    EXPECT_EQ(fs_type(mnt + "/sub"), "tmpfs");
    ::umount2(mnt.c_str(), MNT_DETACH);
  }
}

TEST(Disk, MountOfThisMachine) {
  MountEntry m = mount_of("/proc/self");
  EXPECT_EQ(m.mount_point, "/proc");
  EXPECT_EQ(m.fstype, "proc");
  EXPECT_THROW(mount_of("/no/such/path"), Error);
}

}  // namespace
}  // namespace cp::probe
