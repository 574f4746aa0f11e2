// Files the agent lays out and checks in its run directories: pattern
// files for a protocol server to serve, and their checksums. Nothing here
// needs a protocol client, so the static server agent has all of it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/messages.h"

namespace cp::agent {

using ProgressFn = std::function<void(uint64_t bytes, double seconds)>;

// bytes, seconds, checksum (XXH3-64 hex of the bytes): the file requests' answer.
using FileResult = msg::FileResult;

// Creates `path` (never overwrites) with `size` bytes of pattern content,
// fsyncs it, and with `evict` drops it from the page cache so a protocol
// server reading it later reads the disk.
// `mode`: 0600, or 0644 when a protocol server's user must read it.
FileResult make_pattern_file(const std::string& path, uint64_t size, uint32_t block, bool evict,
                             unsigned mode, const CancelToken& cancel);

// Size and checksum of a file; `evict` drops it from the page cache after.
FileResult checksum_file(const std::string& path, uint32_t block, bool evict,
                         const CancelToken& cancel);

// Plain-file helpers shared with transfer_ops.cc; errors are Error(kIo)
// naming the path.
namespace fileio {

class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0600);
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

void write_all(int fd, const char* p, size_t n, const std::string& path);
size_t read_some(int fd, char* p, size_t n, const std::string& path);

// Removes a half-made file unless disarmed.
struct Unlinker {
  std::string path;
  bool armed = true;
  ~Unlinker();
};

}  // namespace fileio
}  // namespace cp::agent
