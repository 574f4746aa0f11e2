// Linux: the host's CPU model, memory, boot id, a NIC's speed and sysctls,
// from /proc and /sys (platform.h).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/text.h"
#include "probe/platform.h"

namespace cp::probe::os {

std::string cpu_model() {
  std::string text;
  if (!read_file("/proc/cpuinfo", &text)) return {};
  // x86: "model name"; some ARM kernels: "Hardware" or "Processor"; s390: "machine".
  for (const char* key : {"model name", "Hardware", "Processor", "cpu model", "machine"}) {
    size_t pos = 0;
    while ((pos = text.find(key, pos)) != std::string::npos) {
      const bool line_start = pos == 0 || text[pos - 1] == '\n';
      const size_t colon = text.find(':', pos);
      const size_t eol = text.find('\n', pos);
      pos += std::strlen(key);
      if (!line_start || colon == std::string::npos || (eol != std::string::npos && colon > eol)) {
        continue;
      }
      if (trim(std::string_view(text).substr(pos, colon - pos)).empty()) {
        std::string value(trim(std::string_view(text).substr(
            colon + 1, (eol == std::string::npos ? text.size() : eol) - colon - 1)));
        if (!value.empty()) return value;
      }
    }
  }
  return {};
}

uint64_t memory_bytes() {
  std::string text;
  if (read_file("/proc/meminfo", &text)) {
    size_t pos = text.find("MemTotal:");
    if (pos != std::string::npos) {
      uint64_t kib = std::strtoull(text.c_str() + pos + 9, nullptr, 10);
      if (kib > 0) return kib * 1024;
    }
  }
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::string boot_id() {
  std::string text;
  if (!read_file("/proc/sys/kernel/random/boot_id", &text)) return {};
  return std::string(trim(text));
}

int64_t link_speed_mbit(const std::string& ifname) {
  std::string text;
  if (!read_file("/sys/class/net/" + ifname + "/speed", &text)) return 0;
  const std::string_view s = trim(text);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  // -1 (or EINVAL) when the driver does not know, as for lo and many virtual NICs.
  return s.empty() || ec != std::errc() || p != s.data() + s.size() ? 0 : std::max<int64_t>(v, 0);
}

std::optional<std::string> sysctl(const std::string& proc_root, std::string_view key) {
  std::string file = proc_root + "/sys/" + std::string(key);
  std::replace(file.begin() + static_cast<std::ptrdiff_t>(proc_root.size() + 5), file.end(), '.',
               '/');
  std::string text;
  if (!read_file(file, &text)) return std::nullopt;
  return text;
}

std::optional<std::string> nfs_exports(const std::string& proc_root) {
  std::string text;
  if (!read_file(proc_root + "/fs/nfs/exports", &text)) return std::nullopt;
  return text;
}

}  // namespace cp::probe::os
