#include <fmt/format.h>

#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/registry.h"

namespace cp::transfer {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Driver> (*make)();
};

// The one explicit list of drivers.
const Entry kDrivers[] = {
    {"null", make_null_driver}, {"ftp", make_ftp_driver}, {"smb", make_smb_driver},
    {"path", make_path_driver}, {"afp", make_afp_driver}, {"nfs", make_nfs_driver},
};

}  // namespace

size_t File::pread(char*, size_t, uint64_t) {
  throw Error(ErrorKind::kUnsupported, "this protocol driver reads sequentially only");
}

void File::pwrite(const char*, size_t, uint64_t) {
  throw Error(ErrorKind::kUnsupported, "this protocol driver writes sequentially only");
}

const std::vector<std::string>& driver_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kDrivers) v.push_back(e.name);
    return v;
  }();
  return names;
}

std::unique_ptr<Driver> make_driver(const std::string& name) {
  for (const auto& e : kDrivers) {
    if (name == e.name) return e.make();
  }
  std::string known;
  for (const auto& n : driver_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::kConfig, fmt::format("no transfer driver '{}'", name),
              "this build has: " + known);
}

}  // namespace cp::transfer
