// Linux: bypassing the page cache (O_DIRECT) and dropping one file's pages
// (posix_fadvise DONTNEED, no privilege needed), and what a filesystem's own
// cache does to that (platform.h).
#include <fcntl.h>

#include <fmt/format.h>

#include "core/units.h"
#include "probe/platform.h"

namespace cp::probe::os {

bool set_direct_io(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  flags = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
  return ::fcntl(fd, F_SETFL, flags) == 0;
}

std::string evict_file_cache(int fd) {
  // Drops the file's clean, unmapped pages; dirty ones stay (callers fsync first).
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  return "fadvise";
}

CacheVerdict read_cache_verdict(std::string_view fs_type, bool direct, uint64_t file_bytes,
                                uint64_t cache_max_bytes) {
  if (fs_type == "zfs") {
    // Reading more than the ARC can ever hold pushes the file's start out before
    // its end is read: the device serves (nearly) all of it.
    if (cache_max_bytes > 0 && file_bytes > cache_max_bytes) return {};
    return {true, cache_max_bytes > 0
                      ? fmt::format("zfs: the ARC (c_max {}) may hold this {} file: ZFS keeps "
                                    "it whatever O_DIRECT and posix_fadvise say",
                                    format_size(cache_max_bytes), format_size(file_bytes))
                      : std::string("zfs: the ARC may hold the file (its size is unknown: no "
                                    "arcstats): ZFS keeps it whatever O_DIRECT and "
                                    "posix_fadvise say")};
  }
  if (direct) return {};
  return {true,
          "no O_DIRECT (the filesystem refused it): pages evicted with posix_fadvise, "
          "which may leave some cached"};
}

}  // namespace cp::probe::os
