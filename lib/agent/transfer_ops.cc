#include "agent/transfer_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"

namespace cp::agent {
namespace {

class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0600) : path_(path) {
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd_ < 0) {
      throw Error(ErrorKind::kIo, fmt::format("cannot open '{}': {}", path, errno_text(errno)));
    }
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
};

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      throw Error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, errno_text(errno)),
                  errno == ENOSPC ? "free space in that directory" : "");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

size_t read_some(int fd, char* p, size_t n, const std::string& path) {
  for (;;) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      throw Error(ErrorKind::kIo, fmt::format("cannot read '{}': {}", path, errno_text(errno)));
    return static_cast<size_t>(r);
  }
}

// Removes a half-made file unless disarmed.
struct Unlinker {
  std::string path;
  bool armed = true;
  ~Unlinker() {
    if (armed) ::unlink(path.c_str());
  }
};

class Ticker {
 public:
  Ticker(const ProgressFn& fn, double start) : fn_(fn), start_(start), last_(start) {}
  void tick(uint64_t bytes) {
    if (!fn_) return;
    const double now = monotonic_seconds();
    if (now - last_ < 0.25) return;
    last_ = now;
    fn_(bytes, now - start_);
  }

 private:
  const ProgressFn& fn_;
  double start_, last_;
};

}  // namespace

FileResult make_pattern_file(const std::string& path, uint64_t size, uint32_t block, bool evict,
                             unsigned mode, const CancelToken& cancel) {
  Fd fd(path, O_WRONLY | O_CREAT | O_EXCL, static_cast<mode_t>(mode));
  ::fchmod(fd.get(), static_cast<mode_t>(mode));  // whatever the umask
  Unlinker guard{path};
  std::vector<char> buf(block);
  const uint64_t seed = pattern_seed(path.substr(path.rfind('/') + 1));
  Checksum sum;
  const double start = monotonic_seconds();
  for (uint64_t off = 0; off < size;) {
    cancel.check();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block, size - off));
    fill_pattern(buf.data(), n, seed, off);
    sum.update(buf.data(), n);
    write_all(fd.get(), buf.data(), n, path);
    off += n;
  }
  if (::fsync(fd.get()) != 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot fsync '{}': {}", path, errno_text(errno)));
  }
  if (evict) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  guard.armed = false;
  return {size, monotonic_seconds() - start, sum.hex()};
}

FileResult checksum_file(const std::string& path, uint32_t block, bool evict,
                         const CancelToken& cancel) {
  Fd fd(path, O_RDONLY);
  std::vector<char> buf(block);
  Checksum sum;
  FileResult r;
  const double start = monotonic_seconds();
  while (size_t n = read_some(fd.get(), buf.data(), buf.size(), path)) {
    cancel.check();
    sum.update(buf.data(), n);
    r.bytes += n;
  }
  if (evict) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  return r;
}

FileResult transfer_read(transfer::Session& session, const std::string& remote,
                         const std::string& local_path, uint64_t size_hint, uint32_t block,
                         const CancelToken& cancel, const ProgressFn& progress) {
  Fd out(local_path, O_WRONLY | O_CREAT | O_EXCL);
  Unlinker guard{local_path};
  std::vector<char> buf(block);
  Checksum sum;
  FileResult r;
  const double start = monotonic_seconds();
  Ticker ticker(progress, start);
  auto file = session.open(remote, transfer::Mode::kRead, size_hint);
  for (;;) {
    cancel.check();
    const size_t n = file->read(buf.data(), buf.size());
    if (n == 0) break;
    sum.update(buf.data(), n);
    write_all(out.get(), buf.data(), n, local_path);
    r.bytes += n;
    ticker.tick(r.bytes);
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  guard.armed = false;
  return r;
}

FileResult transfer_write(transfer::Session& session, const std::string& local_path,
                          const std::string& remote, uint32_t block, const CancelToken& cancel,
                          const ProgressFn& progress) {
  Fd in(local_path, O_RDONLY);
  std::vector<char> buf(block);
  Checksum sum;
  FileResult r;
  const off_t size = ::lseek(in.get(), 0, SEEK_END);
  ::lseek(in.get(), 0, SEEK_SET);
  const double start = monotonic_seconds();
  Ticker ticker(progress, start);
  auto file = session.open(remote, transfer::Mode::kWrite, static_cast<uint64_t>(size));
  while (size_t n = read_some(in.get(), buf.data(), buf.size(), local_path)) {
    cancel.check();
    sum.update(buf.data(), n);
    file->write(buf.data(), n);
    r.bytes += n;
    ticker.tick(r.bytes);
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  return r;
}

SweepPattern parse_sweep_pattern(const std::string& name) {
  if (name == "seqread") return SweepPattern::kSeqRead;
  if (name == "randread") return SweepPattern::kRandRead;
  if (name == "seqwrite") return SweepPattern::kSeqWrite;
  if (name == "randwrite") return SweepPattern::kRandWrite;
  throw Error(ErrorKind::kPeer, fmt::format("message 'sweep': unknown pattern '{}'", name));
}

FileResult sweep_cell(transfer::Session& session, const std::string& remote, SweepPattern pattern,
                      uint32_t request, uint64_t total, uint64_t file_size,
                      const CancelToken& cancel) {
  CP_CHECK(request > 0);
  if (file_size < request) {
    throw Error(ErrorKind::kConfig, fmt::format("sweep file of {} bytes is smaller than a {} byte "
                                                "request",
                                                file_size, request));
  }
  const bool write = pattern == SweepPattern::kSeqWrite || pattern == SweepPattern::kRandWrite;
  const bool random = pattern == SweepPattern::kRandRead || pattern == SweepPattern::kRandWrite;
  std::vector<char> buf(request);
  if (write) fill_pattern(buf.data(), buf.size(), pattern_seed(remote), 0);
  const uint64_t slots = file_size / request;
  uint64_t state = pattern_seed(remote) | 1;  // xorshift64: deterministic offsets
  auto next_offset = [&]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (state % slots) * request;
  };
  FileResult r;
  const double start = monotonic_seconds();
  auto file = session.open(remote, write ? transfer::Mode::kWrite : transfer::Mode::kRead,
                           write ? file_size : 0);
  while (r.bytes < total) {
    cancel.check();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(request, total - r.bytes));
    if (write) {
      if (random)
        file->pwrite(buf.data(), n, next_offset());
      else
        file->write(buf.data(), n);
      r.bytes += n;
      continue;
    }
    size_t got;
    if (random) {
      got = file->pread(buf.data(), n, next_offset());
    } else {
      got = file->read(buf.data(), n);
    }
    if (got == 0) break;  // a sequential read hit the end of the file
    r.bytes += got;
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  return r;
}

}  // namespace cp::agent
