// Disk probes: a sequential write, then an uncached read, of one file, with
// one aligned buffer whatever the file size (bounded memory in the agent).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/mountinfo.h"
#include "probe/platform.h"
#include "probe/progress.h"

namespace cp::probe {

// Default bytes per write()/read().
inline constexpr uint32_t kDefaultDiskBlock = 1u << 20;
// Buffer and O_DIRECT alignment, bytes; `block` must be a multiple of it.
inline constexpr uint32_t kDiskAlign = 4096;
// Largest accepted `block`, bytes (the buffer is allocated once, at this size at most).
inline constexpr uint32_t kMaxDiskBlock = 64u << 20;

struct DiskResult {
  uint64_t bytes = 0;           // bytes written or read
  double seconds = 0;           // wall time, including the final fsync for writes
  bool direct = false;          // O_DIRECT was used for the bulk of it
  bool cache_possible = false;  // no O_DIRECT: the page cache may have served/absorbed part
  std::string method;           // "O_DIRECT" or "fsync+fadvise"
  // Why cache_possible (reads: also ZFS, whose ARC O_DIRECT and fadvise leave in
  // place, os::read_cache_verdict); "" when it is false.
  std::string cache_reason;
  // The buffer sat on a transparent huge page (io_buffer.h): with O_DIRECT, each `block`
  // request could reach the device whole instead of split at its segment limit.
  bool huge_page = false;
};

// Creates `path` (O_EXCL: never overwrites), writes `size` bytes in `block`-byte writes
// of a non-zero pattern unique per 4 KiB (so neither sparse files nor compression/dedup
// flatter the number), then fsync. Tries O_DIRECT; when the filesystem refuses it
// (EINVAL at open or first write) falls back to buffered + fsync + posix_fadvise(DONTNEED)
// and sets cache_possible. A tail that is not a multiple of kDiskAlign is written without
// O_DIRECT (fcntl clears it), still fsynced. `allow_direct` = false forces the fallback.
// Throws Error(kConfig) for a bad block size, Error(kIo) naming the path and errno
// (EEXIST, ENOSPC, EACCES, ...), Error(kCancelled) when `cancel` fires (checked between
// blocks). On any throw the partially written file is removed.
// `flush_each`: the synchronous write rate, as a file server with sync on
// writes (Samba's `sync always`, an NFS `sync` export): the same writes, each
// block fsynced before the next, so that only the flush differs from a plain
// write's figure (method "O_DIRECT + fsync per block", never cache_possible).
DiskResult disk_write(const std::string& path, uint64_t size, uint32_t block,
                      const CancelToken& cancel, const ProgressFn& progress,
                      bool allow_direct = true, bool flush_each = false);

// Reads `path` to EOF in `block`-byte reads: O_DIRECT where possible, else
// fadvise(DONTNEED) first and cache_possible = true; on ZFS cache_possible
// unless the file is larger than the ARC's c_max (cache_reason says which).
// Errors as disk_write.
DiskResult disk_read(const std::string& path, uint32_t block, const CancelToken& cancel,
                     const ProgressFn& progress, bool allow_direct = true);

// Whether a cache may still serve a read of `bytes` of `path` after the cache
// was bypassed (`bypassed`: O_DIRECT was used, or the pages were evicted after
// an fsync), by the rules of its filesystem (os::read_cache_verdict: on ZFS
// the ARC keeps files up to its c_max).
os::CacheVerdict cache_verdict_of(const std::string& path, uint64_t bytes, bool bypassed);

struct FsSpace {
  uint64_t total = 0;  // bytes
  uint64_t avail = 0;  // bytes available to unprivileged users
};
// statvfs of `path`; throws Error(kIo) when it cannot be read.
FsSpace fs_space(const std::string& path);

// "ext4", "tmpfs", "fuse.sshfs", ... of the filesystem holding `path`: from
// /proc/self/mountinfo, else from the statfs magic (hex "0x..." when not a known one).
// Throws Error(kIo) when `path` does not exist.
std::string fs_type(const std::string& path);

// The mount holding `path` (mount_holding over /proc/self/mountinfo, its
// device preferred); empty fields when unknown. Throws Error(kIo) when `path`
// does not exist.
MountEntry mount_of(const std::string& path);

}  // namespace cp::probe
