#include "core/mountinfo.h"

namespace cp {

std::vector<std::string_view> split_nonempty(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string unescape_mountinfo(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<MountInfoLine> parse_mountinfo(std::string_view text) {
  std::vector<MountInfoLine> out;
  for (std::string_view line : split_nonempty(text, '\n')) {
    const std::vector<std::string_view> f = split_nonempty(line, ' ');
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= f.size()) continue;
    MountInfoLine m;
    m.dev = std::string(f[2]);
    m.root = unescape_mountinfo(f[3]);
    m.mount_point = unescape_mountinfo(f[4]);
    m.options = std::string(f[5]);
    m.fstype = std::string(f[dash + 1]);
    if (dash + 2 < f.size()) m.source = unescape_mountinfo(f[dash + 2]);
    if (dash + 3 < f.size()) m.super_options = std::string(f[dash + 3]);
    out.push_back(std::move(m));
  }
  return out;
}

MountEntry mount_holding(std::string_view mountinfo, std::string_view path, std::string_view dev) {
  MountEntry best;
  bool best_dev = false;
  for (MountInfoLine& m : parse_mountinfo(mountinfo)) {
    if (!under_mount_point(path, m.mount_point)) continue;
    const bool dev_match = !dev.empty() && m.dev == dev;
    // >= : of equal mount points the later line wins (it mounts over).
    if (best.mount_point.empty() || (dev_match && !best_dev) ||
        (dev_match == best_dev && m.mount_point.size() >= best.mount_point.size())) {
      best.mount_point = std::move(m.mount_point);
      best.fstype = std::move(m.fstype);
      best.source = std::move(m.source);
      best.options = std::move(m.options);
      if (!m.super_options.empty()) best.options += "," + m.super_options;
      best_dev = dev_match;
    }
  }
  return best;
}

bool under_mount_point(std::string_view path, std::string_view mount_point) {
  if (mount_point == "/") return true;
  return path == mount_point ||
         (path.size() > mount_point.size() && path.substr(0, mount_point.size()) == mount_point &&
          path[mount_point.size()] == '/');
}

}  // namespace cp
