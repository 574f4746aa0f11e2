// A test's scratch directory (for tests only, not part of a library): made
// fresh under the system's temp directory as the fixture is built, removed
// with all it holds as the fixture goes.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace cp::testing {

class ScratchDir {
 public:
  // <base>/<name>-<pid>, base the system's temp directory unless given: what is
  // there from an earlier, killed run goes first.
  explicit ScratchDir(const std::string& name,
                      const std::filesystem::path& base = std::filesystem::temp_directory_path())
      : path_(base / (name + "-" + std::to_string(getpid()))) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cp::testing
