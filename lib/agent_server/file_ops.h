// Files the agent lays out and checks in its run directories: pattern
// files for a protocol server to serve, and their checksums. Nothing here
// needs a protocol client, so the static server agent has all of it.
//
// Every file is reached relative to its run directory's open fd (openat,
// unlinkat) and never through a symbolic link (O_NOFOLLOW): a run directory
// behind a share is writable by other users (01777), who may plant a link or
// a FIFO at a name the run will use. Files are created O_EXCL (never an
// existing one) and read only when they are regular files with one link.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/messages.h"
#include "core/progress.h"

namespace cp::agent {

// bytes, seconds, checksum (XXH3-64 hex of the bytes): the file requests' answer.
using FileResult = msg::FileResult;

// A file in a run directory: the directory's open fd (not owned) and the
// file's plain name in it; `path` (dir + "/" + name) names it in messages and
// for the probes that take a path.
struct RunFile {
  int dir_fd = -1;
  std::string name;
  std::string path;
};

// Creates the file (O_EXCL|O_NOFOLLOW: never an existing file or link) with
// `size` bytes of pattern content, fsyncs it, and with `evict` drops it from
// the page cache so a protocol server reading it later reads the disk.
// `mode`: 0600, or 0644 when a protocol server's user must read it.
FileResult make_pattern_file(const RunFile& f, uint64_t size, uint32_t block, bool evict,
                             unsigned mode, const CancelToken& cancel);

// Size and checksum of a file; `evict` drops it from the page cache after.
// A symbolic link, FIFO, device or hard-linked file is refused (Error(kIo)).
FileResult checksum_file(const RunFile& f, uint32_t block, bool evict, const CancelToken& cancel);

// Plain-file helpers shared with transfer_ops.cc; errors are Error(kIo)
// naming the path.
namespace fileio {

class Fd {
 public:
  // Creates f (O_CREAT|O_EXCL|O_NOFOLLOW, `flags` besides: O_WRONLY, ...).
  Fd(const RunFile& f, int flags, mode_t mode);
  // Opens f for reading when it is a regular file with a single link, reached
  // without a symbolic link (O_NOFOLLOW|O_NONBLOCK, then fstat: a FIFO never
  // blocks the open).
  explicit Fd(const RunFile& f);
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

void write_all(int fd, const char* p, size_t n, const std::string& path);
size_t read_some(int fd, char* p, size_t n, const std::string& path);

// The Error for an openat of `path` that failed with `err`: a planted link
// (ELOOP) or file (EEXIST) named as such.
Error open_error(int err, const std::string& path);

// Removes a half-made file unless disarmed (unlinkat: never follows a link).
struct Unlinker {
  const RunFile& file;
  bool armed = true;
  ~Unlinker();
};

}  // namespace fileio
}  // namespace cp::agent
