// This process's children, for the tests of drivers that start helper
// processes (not part of a library).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace cp::transfer::testing {

// The pids of this process's child processes, from /proc/<pid>/stat.
inline std::vector<pid_t> child_pids() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(entry.path() / "stat");
    std::string pid, comm, state, ppid;
    st >> pid >> comm >> state >> ppid;
    if (ppid == std::to_string(getpid())) out.push_back(std::stoi(pid));
  }
  return out;
}

}  // namespace cp::transfer::testing
