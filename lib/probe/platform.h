// The probes that depend on the operating system, behind one small
// interface. Everything else in probe/ (and the agent) calls these instead of
// reading /proc, /sys or kernel structs itself, so a port to another OS is
// one implementation file per probe (docs/porting.md says how a macOS client
// and a FreeBSD server would plug in).
//
// Linux implementations: probe/linux/<probe>.cc, one file per probe:
//   cpu_times.cc     per-core busy time                 (/proc/stat)
//   processes.cc     per-process and per-thread CPU     (/proc/PID/stat, task/TID/schedstat)
//   cpu_limits.cc    a process's CPU quota, throttling  (cgroup v1/v2 cpu controller)
//   host.cc          CPU model, memory, boot id, NIC speed, sysctls (/proc, /sys)
//   mounts.cc        a directory's mount, huge-page buffers (/proc/self/mountinfo, smaps)
//   tcp_info.cc      a connection's kernel TCP state    (getsockopt TCP_INFO)
//   page_cache.cc    bypassing and evicting the cache   (O_DIRECT, posix_fadvise)
//   block_device.cc  the disk behind a directory        (/sys/dev/block)
//   zfs.cc           the ZFS ARC                        (/proc/spl/kstat/zfs/arcstats)
//   qdisc.cc         shaping on an interface            (rtnetlink qdisc and class dumps)
//   privilege.cc     what this process may not read     (euid, /proc/PID/ns, smbstatus)
//   sockets.cc       a process's TCP connections        (/proc/PID/fd, /proc/PID/net/tcp{,6})
//
// Plain structs only: no Boost.JSON or Asio here (sysinfo.cc turns them into facts).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "probe/cpu.h"
#include "probe/tcp.h"

namespace cp {
struct MountEntry;  // core/mountinfo.h
}  // namespace cp

namespace cp::probe::os {

// --- CPU (cpu_times.cc) ---------------------------------------------------------
// Per-core cumulative times, indexed by core number (an offline core stays {0, 0});
// empty when they cannot be read. Under `proc_root` (tests give a fake tree).
std::vector<CpuTimes> read_core_times(const std::string& proc_root);

// --- Processes (processes.cc) ---------------------------------------------------
// One process's CPU counters at a moment.
struct ProcessTimes {
  std::string comm;
  int ppid = 0;
  uint64_t jiffies = 0;      // user + system time, clock ticks
  uint64_t start_ticks = 0;  // start time since boot, clock ticks (with the pid: identity)
  // Per thread: time on a CPU and time runnable but waiting for one, ns;
  // empty when not visible.
  std::map<int, std::pair<uint64_t, uint64_t>> thread_ns;
};
// Every process under `proc_root` that can be read (one that exits meanwhile is skipped).
std::map<int, ProcessTimes> read_processes(const std::string& proc_root);
// Every thread's {on-CPU, waiting} ns of process `pid`; false (and `out` empty)
// when any is unreadable or malformed.
bool read_thread_times(const std::string& proc_root, int pid,
                       std::map<int, std::pair<uint64_t, uint64_t>>* out);
// This process's pid as `proc_root` names it (tests give a fake tree: 0 there).
int self_pid(const std::string& proc_root);
// Every process whose name is `comm`, with its command line (NUL-separated) and
// whether it runs in this process's network namespace (unknown without the
// right to look: netns_denied).
struct NamedProcess {
  int pid = 0;
  std::string cmdline;
  bool local_netns = false;
  bool netns_denied = false;
};
std::vector<NamedProcess> processes_named(const std::string& proc_root, std::string_view comm);
// Process `pid`'s network namespace ("net:[4026531993]"; pid 0: this process's),
// "" when it may not be read (another user's, without root) or is gone.
std::string process_netns(const std::string& proc_root, int pid);

// --- Sockets (sockets.cc) -------------------------------------------------------
// The TCP sockets of process `pid`'s network namespace (their inodes, local
// ports, peers; IPv4 and IPv6), as that namespace lists them; empty when unreadable.
std::vector<TcpSocketEntry> netns_tcp_sockets(const std::string& proc_root, int pid);
// The inodes of the sockets process `pid` holds open (its fds); empty when
// unreadable (another user's process, without root).
std::vector<uint64_t> socket_inodes(const std::string& proc_root, int pid);

// --- CPU limits (cpu_limits.cc) -------------------------------------------------
// A process's CPU limit set by its group (Linux: the cgroup CFS quota, v1 or v2),
// % of one core; each group's files are read once per object.
class CpuLimits {
 public:
  CpuLimits(std::string proc_root, std::string fs_root);
  bool any() const { return !mounts_.empty(); }
  // The tightest limit of `pid`'s groups, 0 when none; `dir`, when given, gets
  // the group (its directory) that sets it.
  double of_pid(int pid, std::string* dir = nullptr);

 private:
  std::optional<double> of_cgroup(const CgroupMount& m, const std::string& path, std::string* dir);
  double of_dir(const CgroupMount& m, const std::string& dir);
  std::string proc_root_, fs_root_;
  std::vector<CgroupMount> mounts_;
  std::map<std::string, double> cache_;
};
// A group's CPU periods and how many of them it was throttled in (Linux:
// cpu.stat nr_periods, nr_throttled; the same keys in v1 and v2).
struct ThrottleStat {
  uint64_t periods = 0, throttled = 0;
};
std::optional<ThrottleStat> read_throttle(const std::string& group_dir);

// --- Host (host.cc) -------------------------------------------------------------
std::string cpu_model();  // "" when unknown
uint64_t memory_bytes();  // 0 when unknown
std::string boot_id();    // the running kernel's random id: equal on both ends = one machine
int64_t link_speed_mbit(const std::string& ifname);  // 0 when the driver does not say
// A kernel tunable by its sysctl name ("net.ipv4.tcp_rmem") under `proc_root`;
// nullopt when it does not exist or cannot be read.
std::optional<std::string> sysctl(const std::string& proc_root, std::string_view key);
// The kernel NFS server's exports with their effective options (Linux:
// <proc_root>/fs/nfs/exports); nullopt when it serves none (no nfsd).
std::optional<std::string> nfs_exports(const std::string& proc_root);

// --- Mounts and memory (mounts.cc) ----------------------------------------------
// The mount holding `real_path` (a resolved path) on device `dev`; empty when
// the mount table cannot be read.
MountEntry mount_entry(const std::string& real_path, dev_t dev);
// Whether the `len` bytes at `addr` (one mapping) sit on huge pages.
bool huge_page_backed(const void* addr, size_t len);

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

// --- Block devices (block_device.cc, bus.cc) ---------------------------------------
// The link a disk hangs on, from sysfs (the device's path under /sys/devices):
// kind "sata" (link "6.0 Gbps": /sys/class/ata_link/linkN/sata_spd), "pcie" (an
// NVMe or other PCIe device: "8.0 GT/s PCIe" and its width, from the nearest
// PCI function's current_link_speed / current_link_width), "usb" (the USB
// device's `speed` in Mbit/s), or "virtual" (loop, md, dm, virtio, zram, ...:
// no bus of its own). `ceiling_bytes_per_s` is the link's payload ceiling
// after its line coding, 0 when the link does not say (a negotiated speed of
// "<unknown>").
struct BusLink {
  std::string kind;
  std::string link;  // as sysfs says it: "6.0 Gbps", "8.0 GT/s PCIe x4", "5000 Mbit/s"
  uint64_t ceiling_bytes_per_s = 0;
};
// The bus of the disk whose sysfs directory (resolved, /sys/devices/...) is
// `disk_dir`; nullopt when sysfs does not tell.
std::optional<BusLink> block_bus(const std::string& disk_dir, const std::string& sys_root);
// Payload ceilings, bytes/s, from the negotiated figures (0: unknown):
// SATA's line rate with 8b/10b; PCIe's transfer rate per lane with 8b/10b up
// to 5 GT/s and 128b/130b from 8 GT/s, times the width; USB's signalling rate
// with 8b/10b (5 Gbit/s) or 128b/132b (10 and 20 Gbit/s), USB 2's as it is.
uint64_t sata_ceiling(std::string_view sata_spd);
uint64_t pcie_ceiling(std::string_view current_link_speed, int width);
uint64_t usb_ceiling(std::string_view speed_mbit);

struct BlockDevice {
  std::string name;  // "sda1"
  std::string disk;  // "sda": itself unless a partition
  bool partition = false;
  std::optional<int64_t> read_ahead_kb;
  std::string scheduler;  // the active one; "" when unknown
  std::optional<bool> rotational;
  std::string backing_file;         // loop devices; else ""
  std::vector<std::string> slaves;  // device-mapper / md members, sorted
  std::optional<BusLink> bus;       // the link the disk hangs on; nullopt unknown
  // Each member's (slaves, in order) link: an md/LVM/dm device has no bus of its own.
  std::vector<std::pair<std::string, BusLink>> member_buses;
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
