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

namespace {

// Calls f(n) for every entry of `dir` whose name is a positive number (pids
// under /proc, tids under task/); false when `dir` cannot be opened.
template <class F>
bool for_each_numbered(const std::string& dir_path, F f) {
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return false;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int n = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec != std::errc() || p != name.data() + name.size() || n <= 0) continue;
    if (!f(n)) break;
  }
  ::closedir(dir);
  return true;
}

}  // namespace

bool read_thread_times(const std::string& proc_root, int pid,
                       std::map<int, std::pair<uint64_t, uint64_t>>* out) {
  const std::string dir_path = fmt::format("{}/{}/task", proc_root, pid);
  std::string text;
  bool ok = true;
  if (!for_each_numbered(dir_path, [&](int tid) {
        uint64_t ns = 0, wait = 0;
        // A thread may exit between readdir and read: skip it.
        if (!read_file(fmt::format("{}/{}/schedstat", dir_path, tid), &text)) return true;
        if (!parse_schedstat(text, &ns, &wait)) return ok = false;
        (*out)[tid] = {ns, wait};
        return true;
      })) {
    return false;
  }
  if (!ok) out->clear();
  return ok && !out->empty();
}

std::map<int, ProcessTimes> read_processes(const std::string& proc_root) {
  std::map<int, ProcessTimes> out;
  std::string text;
  for_each_numbered(proc_root, [&](int pid) {
    // A process may exit between readdir and read: just skip it.
    if (!read_file(fmt::format("{}/{}/stat", proc_root, pid), &text)) return true;
    ProcessTimes s;
    if (!parse_pid_stat(text, &s.comm, &s.jiffies, &s.start_ticks, &s.ppid)) return true;
    read_thread_times(proc_root, pid, &s.thread_ns);
    out[pid] = std::move(s);
    return true;
  });
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
  std::string text;
  for_each_numbered(proc_root, [&](int pid) {
    const std::string base = fmt::format("{}/{}", proc_root, pid);
    if (!read_file(base + "/comm", &text) || trim(text) != comm) return true;
    NamedProcess np;
    np.pid = pid;
    if (!read_file(base + "/cmdline", &np.cmdline)) return true;
    char buf[256];
    const ssize_t n = ::readlink((base + "/ns/net").c_str(), buf, sizeof buf);
    np.netns_denied = n < 0 && (errno == EACCES || errno == EPERM);
    np.local_netns =
        !own_netns.empty() && n > 0 && std::string(buf, static_cast<size_t>(n)) == own_netns;
    out.push_back(std::move(np));
    return true;
  });
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
