// Reading small text files from /proc and /sys (internal to lib/probe).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace cp::probe {

// Whole contents of a small file; works for /proc and /sys files, whose reported size
// is 0. False when it cannot be opened or read.
inline bool read_text_file(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return n == 0;
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace cp::probe
