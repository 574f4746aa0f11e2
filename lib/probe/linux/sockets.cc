// Linux: a process's TCP sockets from /proc (platform.h).
#include <dirent.h>
#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "probe/cpu.h"
#include "probe/platform.h"

namespace cp::probe::os {

std::vector<TcpSocketEntry> netns_tcp_sockets(const std::string& proc_root, int pid) {
  // /proc/PID/net is the network namespace of PID, not of the reader.
  std::vector<TcpSocketEntry> out;
  std::string text;
  if (read_file(fmt::format("{}/{}/net/tcp", proc_root, pid), &text)) {
    out = parse_proc_net_tcp(text, false);
  }
  if (read_file(fmt::format("{}/{}/net/tcp6", proc_root, pid), &text)) {
    for (TcpSocketEntry& e : parse_proc_net_tcp(text, true)) out.push_back(std::move(e));
  }
  return out;
}

std::vector<uint64_t> socket_inodes(const std::string& proc_root, int pid) {
  std::vector<uint64_t> out;
  const std::string dir_path = fmt::format("{}/{}/fd", proc_root, pid);
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char buf[64];
    const ssize_t n = ::readlink((dir_path + "/" + e->d_name).c_str(), buf, sizeof buf);
    if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) continue;
    // "socket:[12345]"
    std::string_view link(buf, static_cast<size_t>(n));
    constexpr std::string_view kPrefix = "socket:[";
    if (link.size() < kPrefix.size() + 2 || link.substr(0, kPrefix.size()) != kPrefix ||
        link.back() != ']') {
      continue;
    }
    link = link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1);
    uint64_t inode = 0;
    auto [p, ec] = std::from_chars(link.data(), link.data() + link.size(), inode);
    if (ec == std::errc() && p == link.data() + link.size()) out.push_back(inode);
  }
  ::closedir(dir);
  return out;
}

}  // namespace cp::probe::os
