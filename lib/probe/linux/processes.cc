// Linux: every process's and thread's CPU time from /proc (platform.h).
#include <dirent.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "probe/cpu.h"
#include "probe/platform.h"

namespace cp::probe::os {

bool read_thread_times(const std::string& proc_root, int pid,
                       std::map<int, std::pair<uint64_t, uint64_t>>* out) {
  const std::string dir_path = fmt::format("{}/{}/task", proc_root, pid);
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return false;
  std::string text;
  bool ok = true;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int tid = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec != std::errc() || p != name.data() + name.size() || tid <= 0) continue;
    uint64_t ns = 0, wait = 0;
    // A thread may exit between readdir and read: skip it.
    if (!read_file(fmt::format("{}/{}/schedstat", dir_path, tid), &text)) continue;
    if (!parse_schedstat(text, &ns, &wait)) {
      ok = false;
      break;
    }
    (*out)[tid] = {ns, wait};
  }
  ::closedir(dir);
  if (!ok) out->clear();
  return ok && !out->empty();
}

std::map<int, ProcessTimes> read_processes(const std::string& proc_root) {
  std::map<int, ProcessTimes> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  std::string text;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int pid = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || p != name.data() + name.size() || pid <= 0) continue;
    // A process may exit between readdir and read: just skip it.
    if (!read_file(fmt::format("{}/{}/stat", proc_root, pid), &text)) continue;
    ProcessTimes s;
    if (!parse_pid_stat(text, &s.comm, &s.jiffies, &s.start_ticks, &s.ppid)) continue;
    read_thread_times(proc_root, pid, &s.thread_ns);
    out[pid] = std::move(s);
  }
  ::closedir(dir);
  return out;
}

int self_pid(const std::string& proc_root) {
  char buf[32];
  ssize_t n = ::readlink((proc_root + "/self").c_str(), buf, sizeof buf - 1);
  int pid = 0;
  if (n > 0) {
    auto [p, ec] = std::from_chars(buf, buf + n, pid);
    if (ec == std::errc() && p == buf + n) return pid;
  }
  return proc_root == "/proc" ? static_cast<int>(::getpid()) : 0;
}

std::vector<NamedProcess> processes_named(const std::string& proc_root, std::string_view comm) {
  std::vector<NamedProcess> out;
  const std::string own_netns = process_netns(proc_root, 0);
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  std::string text;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int pid = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || p != name.data() + name.size() || pid <= 0) continue;
    const std::string base = fmt::format("{}/{}", proc_root, pid);
    if (!read_file(base + "/comm", &text) || trim(text) != comm) continue;
    NamedProcess np;
    np.pid = pid;
    if (!read_file(base + "/cmdline", &np.cmdline)) continue;
    char buf[256];
    const ssize_t n = ::readlink((base + "/ns/net").c_str(), buf, sizeof buf);
    np.netns_denied = n < 0 && (errno == EACCES || errno == EPERM);
    np.local_netns =
        !own_netns.empty() && n > 0 && std::string(buf, static_cast<size_t>(n)) == own_netns;
    out.push_back(std::move(np));
  }
  ::closedir(dir);
  return out;
}

std::string process_netns(const std::string& proc_root, int pid) {
  const std::string path =
      pid > 0 ? fmt::format("{}/{}/ns/net", proc_root, pid) : proc_root + "/self/ns/net";
  char buf[256];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace cp::probe::os
