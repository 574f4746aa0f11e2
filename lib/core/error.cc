#include "core/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/enum_names.h"

namespace cp {

namespace {

constexpr EnumName<ErrorKind> kKindNames[] = {{ErrorKind::kUsage, "usage"},
                                              {ErrorKind::kConfig, "config"},
                                              {ErrorKind::kPeer, "peer"},
                                              {ErrorKind::kRemote, "remote"},
                                              {ErrorKind::kIo, "io"},
                                              {ErrorKind::kUnsupported, "unsupported"},
                                              {ErrorKind::kCancelled, "cancelled"}};

}  // namespace

const char* to_string(ErrorKind kind) { return name_in(kKindNames, kind, "?"); }

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
