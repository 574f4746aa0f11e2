// The probes that depend on the operating system, behind one small
// interface. Everything else in probe/ (and the agent) calls these instead of
// reading /proc, /sys or kernel structs itself, so a port to another OS is
// one implementation file per probe (docs/porting.md says how a macOS client
// and a FreeBSD server would plug in).
//
// Linux implementations: probe/linux/<probe>.cc, one file per probe:
//   cpu_times.cc     per-core busy time                 (/proc/stat)
//   tcp_info.cc      a connection's kernel TCP state    (getsockopt TCP_INFO)
//   page_cache.cc    bypassing and evicting the cache   (O_DIRECT, posix_fadvise)
//   block_device.cc  the disk behind a directory        (/sys/dev/block)
//   zfs.cc           the ZFS ARC                        (/proc/spl/kstat/zfs/arcstats)
//   qdisc.cc         shaping on an interface            (rtnetlink qdisc and class dumps)
//   privilege.cc     what this process may not read     (euid, /proc/PID/ns, smbstatus)
//
// Plain structs only: no Boost.JSON or Asio here (sysinfo.cc turns them into facts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/cpu.h"
#include "probe/tcp.h"

namespace cp::probe::os {

// --- CPU (cpu_times.cc) ---------------------------------------------------------
// Per-core cumulative times, indexed by core number (an offline core stays {0, 0});
// empty when they cannot be read. Under `proc_root` (tests give a fake tree).
std::vector<CpuTimes> read_core_times(const std::string& proc_root);

// --- TCP (tcp_info.cc) ----------------------------------------------------------
// The kernel's view of connected TCP socket `fd`; available = false when the
// kernel (or an emulator) gives none of the fields the TCP probe reads.
TcpInfoSummary read_tcp_info(int fd);

// --- Page cache (page_cache.cc) -------------------------------------------------
// Turns direct I/O (bypassing the OS cache) on or off for open file `fd`;
// false when the filesystem refuses it.
bool set_direct_io(int fd, bool on);
// Asks the OS to drop `fd`'s cached pages (clean ones: fsync first). No privilege
// needed; it acts on this file only. Returns the method's name for the record.
std::string evict_file_cache(int fd);

// What the cache of the filesystem holding a file does to a read that used
// `method` ("O_DIRECT" or "fsync+fadvise"): whether a cache may still have
// served it, and why. `cache_max_bytes` is that filesystem's own cache limit
// when it keeps one apart from the page cache (ZFS: the ARC's c_max), else 0.
struct CacheVerdict {
  bool cache_possible = false;
  std::string reason;  // "" when cache_possible is false
};
// Pure: the rules for `fs_type` ("zfs", "ext4", ...). On ZFS neither O_DIRECT
// (ignored before OpenZFS 2.3) nor posix_fadvise (it drops page-cache pages, not
// ARC buffers) keeps the ARC out, so only a file larger than the ARC can hold
// (c_max) is read from the disk; without ZFS, direct I/O is uncached and the
// fadvise fallback may have been served in part.
CacheVerdict read_cache_verdict(std::string_view fs_type, bool direct, uint64_t file_bytes,
                                uint64_t cache_max_bytes);

// --- ZFS (zfs.cc) ---------------------------------------------------------------
struct ArcStats {
  uint64_t size = 0;   // bytes the ARC holds now
  uint64_t c = 0;      // its current target, bytes
  uint64_t c_max = 0;  // its ceiling, bytes
};
// The ARC's figures in arcstats text (the kstat format: "name type data" rows);
// nullopt when c_max is not there.
std::optional<ArcStats> parse_arcstats(std::string_view text);
// <proc_root>/spl/kstat/zfs/arcstats; nullopt when ZFS is not loaded.
std::optional<ArcStats> read_arc_stats(const std::string& proc_root = "/proc");

// --- Shaping (qdisc.cc) ------------------------------------------------------------
// The rate shaping caps interface `ifname` at, bit/s, read from the kernel: the
// lowest tbf, netem or cake rate, and the highest htb root class rate; nullopt
// when none is set or the kernel will not say. Needs no `tc` (BusyBox's prints no
// rates) and no privilege.
std::optional<uint64_t> shaped_rate_bits(const std::string& ifname);

// --- Block devices (block_device.cc) --------------------------------------------
struct BlockDevice {
  std::string name;  // "sda1"
  std::string disk;  // "sda": itself unless a partition
  bool partition = false;
  std::optional<int64_t> read_ahead_kb;
  std::string scheduler;  // the active one; "" when unknown
  std::optional<bool> rotational;
  std::string backing_file;         // loop devices; else ""
  std::vector<std::string> slaves;  // device-mapper / md members, sorted
};
// Device major:minor (a file's st_dev) as sysfs under `sys_root` describes it;
// nullopt when it knows no such block device (tmpfs, NFS, ZFS, btrfs subvolumes).
std::optional<BlockDevice> block_device(unsigned major, unsigned minor,
                                        const std::string& sys_root = "/sys");

// --- Privilege (privilege.cc) ---------------------------------------------------
// One fact the agent measured with a lesser method because it lacks a privilege.
struct DegradedFact {
  std::string fact;       // stable name: "process_netns", "smb_negotiated", "disk_cache_bypass"
  std::string method;     // what was done instead
  std::string privilege;  // what would restore the full method
};

struct PrivilegeContext {
  std::string proc_root = "/proc";
  bool root = false;         // effective uid 0
  std::string disk_fs_type;  // of the disk dir, "" when none was asked for
  std::optional<ArcStats> arc;
  // Samba is served here: smbstatus's outcome decides smb_negotiated.
  bool samba = false;
  bool smbstatus_found = false;  // an smbstatus program exists
  bool smbstatus_ok = false;     // `smbstatus --json` ran and printed JSON
};
// What this host degrades (pure over `ctx` and the files under ctx.proc_root):
// - process_netns: another user's /proc/PID/ns/net is unreadable (needs ptrace
//   rights: root or CAP_SYS_PTRACE), so CPU roles cannot mark processes of other
//   network namespaces, nor pick the smbd of this one;
// - smb_negotiated: smbstatus is missing or refused (it reads smbd's state: root);
// - disk_cache_bypass: a ZFS disk dir (the ARC keeps what fadvise and O_DIRECT
//   leave; root may set primarycache=metadata or shrink the ARC).
std::vector<DegradedFact> degraded_facts(const PrivilegeContext& ctx);
// The live context for this process: euid, the disk dir's filesystem, the ARC,
// and (when `samba`) a run of `smbstatus --json` with `smb_conf` (may be "").
PrivilegeContext privilege_context(const std::string& disk_fs_type, bool samba,
                                   const std::string& smb_conf);

}  // namespace cp::probe::os
