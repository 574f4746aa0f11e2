#include "probe/disk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/mountinfo.h"
#include "core/text.h"
#include "probe/io_buffer.h"
#include "probe/platform.h"

namespace cp::probe {
namespace {

std::string hint_for(int err, const std::string& path) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return fmt::format("free space on the filesystem holding '{}' or use a smaller size", path);
    case EACCES:
    case EPERM:
      return "check the permissions of the directory, or choose one the agent's user may write";
    case EEXIST:
      return fmt::format("remove '{}' or choose another path (chokepoint never overwrites files)",
                         path);
    case ENOENT:
    case ENOTDIR:
      return "check that the directory exists on that host";
    case EROFS:
      return "the filesystem is mounted read-only; choose a writable directory";
    case EIO:
      return "the device reported an I/O error; check the kernel log (dmesg) on that host";
    default:
      return "check the path and the device behind it";
  }
}

Error io_error(const char* op, const std::string& path, int err) {
  return Error(ErrorKind::kIo, fmt::format("{} '{}': {}", op, path, errno_text(err)),
               hint_for(err, path));
}

void check_block(uint32_t block) {
  if (block == 0 || block % kDiskAlign != 0 || block > kMaxDiskBlock) {
    throw Error(ErrorKind::kConfig,
                fmt::format("disk block size {} bytes is not a multiple of {} between {} and {}",
                            block, kDiskAlign, kDiskAlign, kMaxDiskBlock),
                "use a block size such as 1MiB");
  }
}

// Closes the descriptor and, unless released, removes the file (disk_write's cleanup
// after a cancel or an error).
class FileGuard {
 public:
  FileGuard(int fd, std::string path, bool remove)
      : fd_(fd), path_(std::move(path)), remove_(remove) {}
  ~FileGuard() {
    if (fd_ >= 0) ::close(fd_);
    if (remove_) ::unlink(path_.c_str());
  }
  FileGuard(const FileGuard&) = delete;
  FileGuard& operator=(const FileGuard&) = delete;
  int fd() const { return fd_; }
  // Closes now, reporting the error close() may carry (deferred write errors).
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void keep() { remove_ = false; }

 private:
  int fd_;
  std::string path_;
  bool remove_;
};

bool set_direct(int fd, bool on) { return os::set_direct_io(fd, on); }

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Pseudo-random bytes (incompressible); stamp() then makes every 4 KiB unique.
void fill_random(unsigned char* buf, size_t size, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v = splitmix64(state);
    std::memcpy(buf + i, &v, 8);
  }
}

// Writes the file offset and a per-file nonce into the first 16 bytes of each
// 4 KiB chunk of the block about to be written at `offset`: no two chunks of a
// file (or of two runs) are equal, so dedup cannot collapse them. Both words are
// non-zero, so no chunk is all zeros.
void stamp(unsigned char* buf, size_t n, uint64_t offset, uint64_t nonce) {
  for (size_t i = 0; i < n; i += kDiskAlign) {
    uint64_t words[2] = {(offset + i) | 1ull << 63, nonce | 1};
    std::memcpy(buf + i, words, std::min<size_t>(sizeof words, n - i));
  }
}

class Reporter {
 public:
  Reporter(const ProgressFn& progress, double start)
      : progress_(progress), start_(start), last_(start) {}
  void update(uint64_t bytes) {
    if (!progress_) return;
    double now = monotonic_seconds();
    if (now - last_ >= kProgressInterval) {
      last_ = now;
      progress_(bytes, now - start_);
    }
  }

 private:
  const ProgressFn& progress_;
  double start_;
  double last_;
};

std::string method_name(bool direct) { return direct ? "O_DIRECT" : "fsync+fadvise"; }

}  // namespace

DiskResult disk_write(const std::string& path, uint64_t size, uint32_t block,
                      const CancelToken& cancel, const ProgressFn& progress, bool allow_direct,
                      bool flush_each) {
  check_block(block);
  cancel.check();
  IoBuffer buf(block);
  const uint64_t nonce =
      static_cast<uint64_t>(wall_seconds() * 1e9) ^ std::hash<std::string>{}(path);
  fill_random(buf.data(), buf.size(), nonce);

  // Created exclusively first, O_DIRECT enabled afterwards: an open(O_CREAT|O_DIRECT)
  // refused with EINVAL may already have created the file.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error("cannot create", path, errno);
  FileGuard file(fd, path, /*remove=*/true);
  bool direct = allow_direct && set_direct(fd, true);
  // O_DIRECT covers whole 4 KiB units; the tail beyond them is written buffered.
  const uint64_t direct_end = size - size % kDiskAlign;
  uint64_t direct_bytes = 0;

  const double start = monotonic_seconds();
  Reporter reporter(progress, start);
  uint64_t done = 0;
  while (done < size) {
    cancel.check();
    size_t n = static_cast<size_t>(std::min<uint64_t>(block, size - done));
    if (direct && done + n > direct_end) {
      if (done < direct_end) {
        n = static_cast<size_t>(direct_end - done);
      } else {
        if (!set_direct(fd, false)) throw io_error("cannot clear O_DIRECT on", path, errno);
        direct = false;
      }
    }
    stamp(buf.data(), n, done, nonce);
    size_t off = 0;
    while (off < n) {
      ssize_t w = ::write(fd, buf.data() + off, n - off);
      if (w < 0) {
        int err = errno;
        if (err == EINTR) continue;
        // Some filesystems accept the flag but refuse the I/O: go on buffered.
        if (err == EINVAL && direct && set_direct(fd, false)) {
          direct = false;
          continue;
        }
        throw io_error("cannot write", path, err);
      }
      if (w == 0) throw io_error("cannot write", path, ENOSPC);
      off += static_cast<size_t>(w);
      if (direct) direct_bytes += static_cast<uint64_t>(w);
    }
    done += n;
    if (flush_each && ::fsync(fd) != 0) throw io_error("cannot fsync", path, errno);
    reporter.update(done);
  }
  if (::fsync(fd) != 0) throw io_error("cannot fsync", path, errno);
  const double end = monotonic_seconds();
  // Drop what the buffered part left in the page cache so a following read is honest.
  os::evict_file_cache(fd);
  if (file.close() != 0) throw io_error("cannot close", path, errno);
  file.keep();

  DiskResult r;
  r.bytes = done;
  r.seconds = end - start;
  r.direct = done > 0 ? direct_bytes * 2 >= done : direct;
  // Each block flushed before the next: no cache absorbed any of it.
  r.cache_possible = !r.direct && !flush_each;
  if (r.cache_possible) r.cache_reason = "no O_DIRECT (the filesystem refused it)";
  r.method = flush_each ? method_name(r.direct) + " + fsync per block" : method_name(r.direct);
  r.huge_page = buf.huge_backed();
  return r;
}

DiskResult disk_read(const std::string& path, uint32_t block, const CancelToken& cancel,
                     const ProgressFn& progress, bool allow_direct) {
  check_block(block);
  cancel.check();
  IoBuffer buf(block);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open", path, errno);
  FileGuard file(fd, path, /*remove=*/false);
  bool direct = allow_direct && set_direct(fd, true);
  // Without O_DIRECT, evict cached pages first so the device serves the reads.
  if (!direct) os::evict_file_cache(fd);
  uint64_t direct_bytes = 0;

  const double start = monotonic_seconds();
  Reporter reporter(progress, start);
  uint64_t done = 0;
  for (;;) {
    cancel.check();
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EINVAL && direct && set_direct(fd, false)) {
        direct = false;
        os::evict_file_cache(fd);
        continue;
      }
      throw io_error("cannot read", path, err);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
    if (direct) direct_bytes += static_cast<uint64_t>(n);
    reporter.update(done);
  }
  const double end = monotonic_seconds();

  DiskResult r;
  r.bytes = done;
  r.seconds = end - start;
  r.direct = done > 0 ? direct_bytes * 2 >= done : direct;
  r.method = method_name(r.direct);
  r.huge_page = buf.huge_backed();
  // A filesystem with its own cache (ZFS's ARC) may have served it even so.
  const os::CacheVerdict v = cache_verdict_of(path, done, r.direct);
  r.cache_possible = v.cache_possible;
  r.cache_reason = v.reason;
  return r;
}

os::CacheVerdict cache_verdict_of(const std::string& path, uint64_t bytes, bool bypassed) {
  std::string fs;
  try {
    fs = fs_type(path);
  } catch (const Error&) {
  }
  const uint64_t cache_max = fs == "zfs" ? os::read_arc_stats().value_or(os::ArcStats{}).c_max : 0;
  return os::read_cache_verdict(fs, bypassed, bytes, cache_max);
}

FsSpace fs_space(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) throw io_error("cannot statvfs", path, errno);
  FsSpace s;
  s.total = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  s.avail = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  return s;
}

namespace {

const char* magic_name(unsigned long magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";  // ext2/3/4 share it
    case 0x01021994:
      return "tmpfs";
    case 0x858458F6:
      return "ramfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x794C7630:
      return "overlay";
    case 0x6969:
      return "nfs";
    case 0xFF534D42:
      return "cifs";
    case 0xFE534D42:
      return "smb2";
    case 0x65735546:
      return "fuse";
    case 0x01021997:
      return "9p";
    case 0x73717368:
      return "squashfs";
    case 0x4D44:
      return "vfat";
    case 0x2011BAB0:
      return "exfat";
    case 0x5346544E:
      return "ntfs";
    case 0x00C36400:
      return "ceph";
    case 0x3153464A:
      return "jfs";
    case 0x52654973:
      return "reiserfs";
    default:
      return nullptr;
  }
}

}  // namespace

namespace {

std::string real_path_of(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw io_error("cannot resolve", path, errno);
  return resolved;
}

}  // namespace

MountEntry mount_of(const std::string& path) {
  const std::string resolved = real_path_of(path);
  struct stat st;
  if (::stat(resolved.c_str(), &st) != 0) throw io_error("cannot stat", path, errno);
  return os::mount_entry(resolved, st.st_dev);
}

std::string fs_type(const std::string& path) {
  MountEntry m = mount_of(path);
  if (!m.fstype.empty()) return m.fstype;
  struct statfs sf;
  if (::statfs(real_path_of(path).c_str(), &sf) == 0) {
    if (const char* name = magic_name(static_cast<unsigned long>(sf.f_type))) return name;
    return fmt::format("0x{:x}", static_cast<unsigned long>(sf.f_type));
  }
  return "unknown";
}

}  // namespace cp::probe
