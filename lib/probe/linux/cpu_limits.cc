// Linux: a process's CPU limit from its control group (cgroup v1 CFS quota or
// v2 cpu.max) and the group's throttling (cpu.stat) (platform.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "probe/cpu.h"
#include "probe/platform.h"

namespace cp::probe::os {
namespace {

bool contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool to_u64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

CpuLimits::CpuLimits(std::string proc_root, std::string fs_root)
    : proc_root_(std::move(proc_root)), fs_root_(std::move(fs_root)) {
  std::string text;
  if (read_file(proc_root_ + "/self/mountinfo", &text)) mounts_ = parse_cgroup_mounts(text);
}

double CpuLimits::of_pid(int pid, std::string* dir) {
  if (mounts_.empty()) return 0;
  std::string text;
  if (!read_file(fmt::format("{}/{}/cgroup", proc_root_, pid), &text)) return 0;
  double best = 0;
  for (const PidCgroup& c : parse_pid_cgroup(text)) {
    const bool v2 = c.hierarchy == "0" && c.controllers.empty();
    if (!v2 && !contains(c.controllers, "cpu")) continue;
    for (const CgroupMount& m : mounts_) {
      if (m.v2 != v2 || (!v2 && !contains(m.controllers, "cpu"))) continue;
      std::string where;
      std::optional<double> limit = of_cgroup(m, c.path, &where);
      if (!limit) continue;  // this mount shows another part of the hierarchy
      if (*limit > 0 && (best == 0 || *limit < best)) {
        best = *limit;
        if (dir != nullptr) *dir = where;
      }
      break;
    }
  }
  return best;
}

std::optional<double> CpuLimits::of_cgroup(const CgroupMount& m, const std::string& path,
                                           std::string* dir) {
  std::string rel;
  if (m.root == "/") {
    rel = path;
  } else if (path == m.root) {
    rel = "";
  } else if (path.rfind(m.root + "/", 0) == 0) {
    rel = path.substr(m.root.size());
  } else {
    return std::nullopt;
  }
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  double best = 0;
  for (;;) {
    const std::string here = fs_root_ + m.mount_point + rel;
    const double limit = of_dir(m, here);
    if (limit > 0 && (best == 0 || limit < best)) {
      best = limit;
      *dir = here;
    }
    if (rel.empty()) break;
    rel.resize(rel.rfind('/'));
  }
  return best;
}

double CpuLimits::of_dir(const CgroupMount& m, const std::string& dir) {
  auto it = cache_.find(dir);
  if (it != cache_.end()) return it->second;
  double limit = 0;
  std::string a, b;
  if (m.v2) {
    if (read_file(dir + "/cpu.max", &a)) limit = parse_cpu_max(a);
  } else if (read_file(dir + "/cpu.cfs_quota_us", &a) &&
             read_file(dir + "/cpu.cfs_period_us", &b)) {
    limit = parse_cfs_limit(a, b);
  }
  return cache_[dir] = std::max(limit, 0.0);
}

std::optional<ThrottleStat> read_throttle(const std::string& dir) {
  std::string text;
  if (!read_file(dir + "/cpu.stat", &text)) return std::nullopt;
  ThrottleStat t;
  bool periods = false, throttled = false;
  for (std::string_view line : split(text, '\n')) {
    const std::vector<std::string_view> f = split_ws(line);
    if (f.size() != 2) continue;
    if (f[0] == "nr_periods") periods = to_u64(f[1], &t.periods);
    if (f[0] == "nr_throttled") throttled = to_u64(f[1], &t.throttled);
  }
  if (!periods || !throttled) return std::nullopt;
  return t;
}

}  // namespace cp::probe::os
