#include "core/random.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/error.h"

namespace cp {
namespace {

// Fills buf from /dev/urandom: kernels before 3.17 have no getrandom.
bool read_urandom(unsigned char* buf, size_t n) {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return got == n;
}

}  // namespace

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t r = ::getrandom(buf.data() + got, bytes - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (got < bytes && !read_urandom(buf.data(), bytes)) {
    throw Error(ErrorKind::kIo, "cannot read random bytes (getrandom and /dev/urandom failed)",
                "check that /dev/urandom exists and is readable");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : buf) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace cp
