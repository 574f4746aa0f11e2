#include "core/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cp {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return "usage";
    case ErrorKind::kConfig:
      return "config";
    case ErrorKind::kPeer:
      return "peer";
    case ErrorKind::kRemote:
      return "remote";
    case ErrorKind::kIo:
      return "io";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kCancelled:
      return "cancelled";
  }
  return "?";
}

std::string describe(const Error& e) {
  std::string s = e.what();
  if (!e.hint().empty()) s += "\n  fix: " + e.hint();
  return s;
}

std::string errno_text(int err) { return std::strerror(err); }

void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "chokepoint: internal error: CHECK(%s) failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace cp
