// `chokepoint lab throttle`: cgroup limits on the server host's smbd (CPU) and
// on its disk (read/write bytes/s on its loop device), and on the client host
// (the CPU of everything its sshd starts, its loop disk), for tests that must
// see the verdict name the SMB layer, a disk or the client's CPU, and for
// users' experiments. cgroup v1 where the machine has it (cpu.cfs_quota_us,
// blkio.throttle.*_bps_device), else v2 (cpu.max, io.max). lab.h declares
// throttle(); this header holds the pure planning parts, for tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lab/lab.h"

namespace cp::lab {

// The cgroup dirs the lab makes are named from this (and nothing else is
// ever removed by clear or down).
inline constexpr const char* kCgroupPrefix = "chokepoint-lab";
// CFS period for the smbd quota, microseconds (the kernel's default).
inline constexpr int kCfsPeriodUs = 100000;
// The smallest quota the kernel takes, microseconds.
inline constexpr int kCfsMinQuotaUs = 1000;

struct CgroupLayout {
  std::string cpu_v1;                       // v1 hierarchy with the cpu controller; "" if none
  std::string blkio_v1;                     // v1 hierarchy with blkio; "" if none
  std::string v2;                           // the cgroup2 mount; "" if none
  std::vector<std::string> v2_controllers;  // what its root offers ("cpu", "io", ...)
};
// From /proc/self/mountinfo text and the v2 root's cgroup.controllers text.
CgroupLayout parse_cgroup_layout(std::string_view mountinfo, std::string_view v2_controllers);
// This machine's.
CgroupLayout cgroup_layout();

struct CgroupOp {
  enum Kind {
    kMkdir,  // create `path` (an existing dir is fine)
    kWrite,  // write `value` to the file `path`
    kMove,   // write the pid `value` to `path` (a cgroup.procs); the process may be gone
  };
  Kind kind;
  std::string path;
  std::string value;
};

struct ThrottlePlan {
  std::vector<CgroupOp> ops;
  std::vector<std::string> cgroups;  // the dirs it makes, deepest first (for LabThrottle::cgroups)
};

// The client host's part: its loop device ("MAJ:MIN"; needed only for a
// client disk limit) and every process in it (its sshd among them).
struct ClientTargets {
  std::string device;
  std::vector<int> pids;
};

// The operations that give `want` (the whole throttle wanted, not a change)
// to the server host: smbd's processes get the CPU quota (ganesha.nfsd's,
// `nfsd_pids`, a quota of their own), all of
// `server_pids` (which include smbd's) the disk limits on `device`
// ("MAJ:MIN"); `client`'s processes the client CPU quota and the client disk
// limits. Throws Error(kUnsupported) naming the missing controller.
// The cgroups are named from `name` (an instance's InstanceNames::cgroup_name,
// which starts with kCgroupPrefix).
ThrottlePlan plan_throttle(const CgroupLayout& layout, const LabThrottle& want,
                           const std::string& device, const std::vector<int>& smbd_pids,
                           const std::vector<int>& server_pids,
                           const std::string& name = kCgroupPrefix,
                           const std::vector<int>& nfsd_pids = {},
                           const ClientTargets& client = {});

// Carries out the plan; throws Error(kIo) naming the file that refused.
// A process that exited before it could be moved is not an error.
void apply_plan(const ThrottlePlan& plan);

// The hierarchy root a lab cgroup dir hangs from ("/sys/fs/cgroup/cpu" for
// "/sys/fs/cgroup/cpu/chokepoint-lab-smbd"); "" when `dir` is not the lab's.
std::string cgroup_root_of(const std::string& dir);

// Removes the cgroups `t` records: moves what still runs in them to their
// hierarchy's root, then removes the dirs. Skips dirs that are gone or not
// the lab's. Throws Error(kIo) listing what it could not remove.
void remove_throttle_cgroups(const LabThrottle& t);

// "smbd CPU 20% of a core; server disk read 50 MB/s; client CPU 25% of a
// core" or "none".
std::string throttle_text(const LabThrottle& t);

}  // namespace cp::lab
