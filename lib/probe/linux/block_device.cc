// Linux: the block device behind a file's st_dev, from sysfs (platform.h).
#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>

#include "core/text.h"
#include "probe/platform.h"
#include "probe/sysinfo.h"

namespace cp::probe::os {

namespace {

// Trimmed contents of a one-line file, "" when unreadable.
std::string read_line(const std::string& path) {
  std::string text;
  if (!read_file(path, &text)) return {};
  size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  return text.substr(a, b - a);
}

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dir_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::optional<BlockDevice> block_device(unsigned maj, unsigned min, const std::string& sys_root) {
  char resolved[PATH_MAX];
  const std::string link = fmt::format("{}/dev/block/{}:{}", sys_root, maj, min);
  if (::realpath(link.c_str(), resolved) == nullptr) return std::nullopt;
  const std::string dev_dir = resolved;
  BlockDevice d;
  d.partition = ::access((dev_dir + "/partition").c_str(), F_OK) == 0;
  // A partition's directory sits inside its disk's; the queue belongs to the disk.
  const std::string disk_dir = d.partition ? dir_name(dev_dir) : dev_dir;
  d.name = base_name(dev_dir);
  d.disk = base_name(disk_dir);
  const std::string queue = disk_dir + "/queue/";
  const std::string ra = read_line(queue + "read_ahead_kb");
  int64_t kb = 0;
  auto [p, ec] = std::from_chars(ra.data(), ra.data() + ra.size(), kb);
  if (!ra.empty() && ec == std::errc() && p == ra.data() + ra.size()) d.read_ahead_kb = kb;
  std::string sched;
  if (read_file(queue + "scheduler", &sched)) d.scheduler = parse_scheduler(sched);
  const std::string rot = read_line(queue + "rotational");
  if (rot == "1" || rot == "0") d.rotational = rot == "1";
  d.backing_file = read_line(disk_dir + "/loop/backing_file");
  if (DIR* dir = ::opendir((disk_dir + "/slaves").c_str())) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') d.slaves.emplace_back(e->d_name);
    }
    ::closedir(dir);
    std::sort(d.slaves.begin(), d.slaves.end());
  }
  d.bus = block_bus(disk_dir, sys_root);
  // Each member's own link: slaves/NAME links to the member's directory (a
  // partition's sits inside its disk's).
  for (const std::string& m : d.slaves) {
    if (::realpath((disk_dir + "/slaves/" + m).c_str(), resolved) == nullptr) continue;
    const std::string member = resolved;
    const bool part = ::access((member + "/partition").c_str(), F_OK) == 0;
    if (auto bus = block_bus(part ? dir_name(member) : member, sys_root)) {
      d.member_buses.emplace_back(m, *bus);
    }
  }
  return d;
}

}  // namespace cp::probe::os
