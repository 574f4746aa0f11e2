#include "agent_server/file_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "probe/platform.h"

namespace cp::agent {
namespace fileio {

Error open_error(int err, const std::string& path) {
  if (err == ELOOP) {
    return Error(ErrorKind::kIo,
                 fmt::format("'{}' is a symbolic link, not a file this run made: left alone", path),
                 "another user of the server planted it in the run directory; remove it and find "
                 "out who did");
  }
  if (err == EEXIST) {
    return Error(ErrorKind::kIo,
                 fmt::format("'{}' exists already: the agent creates only new files", path),
                 "another user of the server planted it in the run directory; remove it and find "
                 "out who did");
  }
  return Error(ErrorKind::kIo, fmt::format("cannot open '{}': {}", path, errno_text(err)));
}

Fd::Fd(const RunFile& f, int flags, mode_t mode) {
  fd_ = ::openat(f.dir_fd, f.name.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd_ < 0) throw open_error(errno, f.path);
}

Fd::Fd(const RunFile& f) {
  fd_ =
      ::openat(f.dir_fd, f.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw open_error(errno, f.path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd_);
    fd_ = -1;
    throw Error(ErrorKind::kIo,
                fmt::format("'{}' is not a regular file with one link (a FIFO, device or hard "
                            "link): left alone",
                            f.path),
                "another user of the server planted it in the run directory; remove it and find "
                "out who did");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

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

Unlinker::~Unlinker() {
  if (armed) ::unlinkat(file.dir_fd, file.name.c_str(), 0);
}

}  // namespace fileio

using fileio::Fd;
using fileio::read_some;
using fileio::Unlinker;
using fileio::write_all;

FileResult make_pattern_file(const RunFile& f, uint64_t size, uint32_t block, bool evict,
                             unsigned mode, const CancelToken& cancel) {
  Fd fd(f, O_WRONLY, static_cast<mode_t>(mode));
  Unlinker guard{f};
  ::fchmod(fd.get(), static_cast<mode_t>(mode));  // whatever the umask
  std::vector<char> buf(block);
  const uint64_t seed = pattern_seed(f.name);
  Checksum sum;
  const double start = monotonic_seconds();
  for (uint64_t off = 0; off < size;) {
    cancel.check();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block, size - off));
    fill_pattern(buf.data(), n, seed, off);
    sum.update(buf.data(), n);
    write_all(fd.get(), buf.data(), n, f.path);
    off += n;
  }
  if (::fsync(fd.get()) != 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot fsync '{}': {}", f.path, errno_text(errno)));
  }
  if (evict) probe::os::evict_file_cache(fd.get());
  guard.armed = false;
  return {size, monotonic_seconds() - start, sum.hex()};
}

FileResult checksum_file(const RunFile& f, uint32_t block, bool evict, const CancelToken& cancel) {
  Fd fd(f);
  std::vector<char> buf(block);
  Checksum sum;
  FileResult r;
  const double start = monotonic_seconds();
  while (size_t n = read_some(fd.get(), buf.data(), buf.size(), f.path)) {
    cancel.check();
    sum.update(buf.data(), n);
    r.bytes += n;
  }
  if (evict) probe::os::evict_file_cache(fd.get());
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  return r;
}

}  // namespace cp::agent
