// Linux: where a directory is mounted (/proc/self/mountinfo) and whether a
// buffer is on huge pages (/proc/self/smaps) (platform.h).
#include <sys/sysmacros.h>

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "core/mountinfo.h"
#include "core/text.h"
#include "probe/disk.h"
#include "probe/io_buffer.h"
#include "probe/platform.h"

namespace cp::probe::os {

MountEntry mount_entry(const std::string& real_path, dev_t dev) {
  const std::optional<std::string> text = read_file("/proc/self/mountinfo");
  if (!text) return {};
  return mount_holding(*text, real_path, fmt::format("{}:{}", major(dev), minor(dev)));
}

bool huge_page_backed(const void* addr, size_t len) {
  // Streamed: the agent's smaps runs to half a megabyte (libsmbclient maps hundreds of
  // libraries), and only one mapping's lines are wanted.
  std::ifstream smaps("/proc/self/smaps");
  const long kib = anon_huge_kib(smaps, reinterpret_cast<uintptr_t>(addr));
  return kib >= 0 && static_cast<size_t>(kib) * 1024 >= len;
}

}  // namespace cp::probe::os
