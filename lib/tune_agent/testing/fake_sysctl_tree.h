// A fake /proc tree for the tune journal's tests (not part of a library): the
// journal's checks are rooted at its directory, where server.tcp_rmem's file
// stands at proc/sys/net/ipv4/tcp_rmem.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "core/testing/scratch_dir.h"
#include "core/text.h"

namespace cp::tune::testing {

class FakeSysctlTree {
 public:
  // /var/tmp/<name>-<pid>, removed as it goes; its tcp_rmem file holds `content`.
  FakeSysctlTree(const std::string& name, const std::string& content) : scratch_(name, "/var/tmp") {
    std::filesystem::create_directories(dir() + "/proc/sys/net/ipv4");
    std::ofstream(tcp_rmem()) << content;
  }
  std::string dir() const { return scratch_.path().string(); }
  std::string tcp_rmem() const { return dir() + "/proc/sys/net/ipv4/tcp_rmem"; }

 private:
  cp::testing::ScratchDir scratch_;
};

// The whole file; "" when it cannot be read.
inline std::string slurp(const std::string& path) { return read_file(path).value_or(""); }

}  // namespace cp::tune::testing
