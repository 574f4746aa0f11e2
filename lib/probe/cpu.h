// CPU load while a sample runs: per-core busy time from /proc/stat, sampled on
// a background thread, and the busiest processes from /proc/PID/stat with the
// CPU limit of their cgroup (a process starved by a quota never fills a core,
// so its quota is the evidence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpu_message.h"

namespace cp::probe {

// The sample's CPU message (one struct and codec, shared with analysis): core/cpu_message.h.
using ProcLoad = msg::ProcLoad;
using CpuSummary = msg::CpuSummary;

inline constexpr double kNearLimit = 0.5;

// One line of /proc/PID/net/tcp or tcp6: a TCP socket of that network namespace.
struct TcpSocketEntry {
  uint64_t inode = 0;
  int local_port = 0;
  std::string remote_address;  // "198.18.0.2", "fd00::2"; an IPv4-mapped IPv6 one as IPv4
  bool established = false;    // state 01 (a listener is 0A)
};
// The sockets of /proc/PID/net/tcp (`v6` false) or tcp6 text; lines that do
// not parse are skipped.
std::vector<TcpSocketEntry> parse_proc_net_tcp(std::string_view text, bool v6);
// An address in the form parse_proc_net_tcp gives ("::ffff:1.2.3.4" as
// "1.2.3.4", IPv6 compressed); "" when `address` is no IP literal.
std::string canonical_address(std::string_view address);

// The connection the sample's file server holds (msg::CpuStartRequest): a
// process holding an established socket of local port `port` whose peer is
// `peer`, or one of its descendants, is this end's file server whatever its
// network namespace. Inactive when either is empty.
struct ServerConnection {
  int port = 0;
  std::string peer;  // canonical_address()
};

class CpuSampler {
 public:
  // Samples <proc_root>/stat every interval_s on a background thread from start() to stop().
  // Cgroup mount points from <proc_root>/self/mountinfo are read under fs_root ("" on a real
  // system; tests give a fake tree).
  explicit CpuSampler(double interval_s = 0.25, std::string proc_root = "/proc",
                      std::string fs_root = "");
  ~CpuSampler();  // stops the thread if still running
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Throws Error(kIo) when <proc_root>/stat cannot be read. Calling it while running is a bug.
  // `conn`: the connection the sample's file server holds, when known.
  void start(const ServerConnection& conn = {});
  // Ends the window and summarises it. Calling it when not running is a bug.
  CpuSummary stop();
  // Closes one sampling interval now (what the thread does every interval_s); lets
  // tests with a fake proc_root decide exactly which snapshots are taken.
  void sample_now();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Pure parsers (unit-tested on fixed text):
struct CpuTimes {
  uint64_t busy = 0;     // user+nice+system+irq+softirq+steal (guest is already in user), ticks
  uint64_t total = 0;    // busy + idle + iowait, ticks
  uint64_t system = 0;   // of busy: system, ticks
  uint64_t softirq = 0;  // of busy: irq + softirq, ticks
};
// Per core, indexed by N of the cpuN lines (not the aggregate "cpu" line); a core missing
// from the text (offline) stays {0, 0}.
std::vector<CpuTimes> parse_proc_stat(std::string_view text);
// /proc/PID/stat: comm (may contain spaces and parens: it runs to the LAST ')') and
// utime+stime in ticks; optionally the start time (ticks after boot) that tells a reused
// pid apart. False when the text is not in that format.
bool parse_pid_stat(std::string_view text, std::string* comm, uint64_t* jiffies,
                    uint64_t* start_ticks = nullptr, int* ppid = nullptr);

// The first two fields of /proc/PID/task/TID/schedstat: time on a CPU and time
// runnable but waiting on a run queue, ns. False when absent
// or malformed (kernels without schedstat support print "0 0 0" for a running task:
// the caller then falls back to the tick counts of /proc/PID/stat).
bool parse_schedstat(std::string_view text, uint64_t* ns, uint64_t* wait_ns = nullptr);

// The role of a process (see ProcLoad::role) from its comm and the comms of its
// ancestors (nearest first): "server" for a file server daemon (smbd, vsftpd, afpd,
// ganesha.nfsd, ...) or anything it forked; "kernel" for kthreadd's children; else
// "other". The sampler's own process is "agent" (decided by the caller).
std::string process_role(int pid, int ppid, const std::string& comm,
                         const std::vector<std::string>& ancestor_comms);
// Whether `comm` names a file server daemon.
bool is_file_server_comm(std::string_view comm);

// A cgroup hierarchy mounted on this system, from /proc/self/mountinfo.
struct CgroupMount {
  std::string mount_point;               // "/sys/fs/cgroup/cpu" (octal escapes decoded)
  std::string root;                      // the hierarchy's dir mounted there: "/" usually
  bool v2 = false;                       // cgroup2
  std::vector<std::string> controllers;  // v1: its super options but rw/ro: "cpu", "name=systemd"
};
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

// One line of /proc/PID/cgroup: "4:cpu,cpuacct:/lab/smbd"; v2 is "0::/path".
struct PidCgroup {
  std::string hierarchy;                 // "4"; "0" for v2
  std::vector<std::string> controllers;  // empty for v2
  std::string path;                      // "/lab/smbd"
};
std::vector<PidCgroup> parse_pid_cgroup(std::string_view text);

// A cgroup's CPU limit in % of one core; 0 for no limit ("-1", "max"), -1 when unparsable.
// v1: cpu.cfs_quota_us and cpu.cfs_period_us; v2: cpu.max ("20000 100000").
double parse_cfs_limit(std::string_view quota_us, std::string_view period_us);
double parse_cpu_max(std::string_view text);

// The CPU limit of process `pid` (see ProcLoad::cpu_limit_pct), from <proc_root>/PID/cgroup,
// <proc_root>/self/mountinfo and the limit files under fs_root; 0 when none is visible.
double process_cpu_limit_pct(int pid, const std::string& proc_root = "/proc",
                             const std::string& fs_root = "");

}  // namespace cp::probe
