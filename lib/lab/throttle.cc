#include "lab/throttle.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.h"
#include "core/mountinfo.h"
#include "core/text.h"
#include "core/units.h"
#include "lab/layout.h"
#include "lab/sys.h"

namespace cp::lab {
namespace {

bool has(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Writes a cgroup control file in one write(2), as the kernel wants.
int write_control(const std::string& path, const std::string& value) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return errno;
  const bool ok = std::fwrite(value.data(), 1, value.size(), f) == value.size();
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  return err;
}

std::string bps_text(uint64_t bps) { return bps ? std::to_string(bps) : "max"; }

}  // namespace

CgroupLayout parse_cgroup_layout(std::string_view mountinfo, std::string_view v2_controllers) {
  CgroupLayout l;
  for (const MountInfoLine& line : parse_mountinfo(mountinfo)) {
    const std::string& mount_point = line.mount_point;
    if (line.fstype == "cgroup2") {
      if (l.v2.empty()) l.v2 = mount_point;
    } else if (line.fstype == "cgroup") {
      for (std::string_view opt : split_nonempty(line.super_options, ',')) {
        if (opt == "cpu" && l.cpu_v1.empty()) l.cpu_v1 = mount_point;
        if (opt == "blkio" && l.blkio_v1.empty()) l.blkio_v1 = mount_point;
      }
    }
  }
  for (std::string_view c : split_nonempty(v2_controllers, ' ')) {
    std::string word(c);
    while (!word.empty() && (word.back() == '\n' || word.back() == '\r')) word.pop_back();
    if (!word.empty()) l.v2_controllers.push_back(word);
  }
  return l;
}

CgroupLayout cgroup_layout() {
  const std::string info = cp::read_file("/proc/self/mountinfo").value_or("");
  CgroupLayout l = parse_cgroup_layout(info, "");
  if (!l.v2.empty())
    l = parse_cgroup_layout(info, cp::read_file(l.v2 + "/cgroup.controllers").value_or(""));
  return l;
}

namespace {

// Each process of `pids` moved into cgroup `dir`, but those in `skip`.
void move_all(ThrottlePlan& p, const std::vector<int>& pids, const std::string& dir,
              const std::vector<int>& skip = {}) {
  for (int pid : pids) {
    if (std::find(skip.begin(), skip.end(), pid) != skip.end()) continue;
    p.ops.push_back({CgroupOp::kMove, dir + "/cgroup.procs", std::to_string(pid)});
  }
}

// A share of one core as a CFS quota per kCfsPeriodUs, microseconds.
int quota_of(double share) {
  return std::max(kCfsMinQuotaUs, static_cast<int>(std::lround(share * kCfsPeriodUs)));
}

// One CPU quota's group: its leaf name, share of a core (0: none) and processes.
struct CpuQuota {
  const char* leaf;
  double share;
  const std::vector<int>& pids;
};

// One host's disk limit: its group's leaf, the device "MAJ:MIN", bytes/s (0: none).
struct DiskLimit {
  bool wanted;
  const char* leaf;
  const std::string& device;
  uint64_t read_bps, write_bps;
  const std::vector<int>& pids;
};

// cgroup v1: a cpu group per quota, a blkio group per host limiting that
// host's own loop device.
void plan_v1(const CgroupLayout& l, const std::string& name, bool cpu_v1, bool io_v1,
             const std::vector<CpuQuota>& quotas, const std::vector<DiskLimit>& disks,
             ThrottlePlan& p) {
  for (const auto& q : quotas) {
    if (!cpu_v1 || q.share <= 0) continue;
    const std::string dir = l.cpu_v1 + "/" + name + "-" + q.leaf;
    p.ops.push_back({CgroupOp::kMkdir, dir, ""});
    p.ops.push_back({CgroupOp::kWrite, dir + "/cpu.cfs_period_us", std::to_string(kCfsPeriodUs)});
    p.ops.push_back(
        {CgroupOp::kWrite, dir + "/cpu.cfs_quota_us", std::to_string(quota_of(q.share))});
    move_all(p, q.pids, dir);
    p.cgroups.push_back(dir);
  }
  for (const auto& d : disks) {
    if (!io_v1 || !d.wanted) continue;
    const std::string dir = l.blkio_v1 + "/" + name + "-" + d.leaf;
    p.ops.push_back({CgroupOp::kMkdir, dir, ""});
    // "MAJ:MIN 0" removes a rule, so both files are always written.
    p.ops.push_back({CgroupOp::kWrite, dir + "/blkio.throttle.read_bps_device",
                     fmt::format("{} {}", d.device, d.read_bps)});
    p.ops.push_back({CgroupOp::kWrite, dir + "/blkio.throttle.write_bps_device",
                     fmt::format("{} {}", d.device, d.write_bps)});
    move_all(p, d.pids, dir);
    p.cgroups.push_back(dir);
  }
}

// cgroup v2: a process sits in one cgroup only, and only leaves hold
// processes: <base>/smbd, <base>/nfsd (cpu.max), <base>/client (its cpu.max
// and io.max) and <base>/server (the server's other processes); the server's
// io.max on <base> covers smbd and nfsd too.
void plan_v2(const CgroupLayout& l, const std::string& name, bool cpu_v2, bool io_v2,
             const std::vector<CpuQuota>& quotas, const DiskLimit& server_disk,
             const DiskLimit& client_disk, double client_cpu, const std::vector<int>& quota_pids,
             ThrottlePlan& p) {
  const std::string base = l.v2 + "/" + name;
  std::string controllers = cpu_v2 ? "+cpu" : "";
  if (io_v2) controllers += controllers.empty() ? "+io" : " +io";
  p.ops.push_back({CgroupOp::kWrite, l.v2 + "/cgroup.subtree_control", controllers});
  p.ops.push_back({CgroupOp::kMkdir, base, ""});
  p.ops.push_back({CgroupOp::kWrite, base + "/cgroup.subtree_control", controllers});
  const bool server_io = io_v2 && server_disk.wanted;
  if (server_io) {
    p.ops.push_back({CgroupOp::kWrite, base + "/io.max",
                     fmt::format("{} rbps={} wbps={}", server_disk.device,
                                 bps_text(server_disk.read_bps), bps_text(server_disk.write_bps))});
  }
  bool server_cpu = false;
  for (const auto& q : quotas) {
    if (!cpu_v2 || q.share <= 0 || q.leaf == std::string_view("client")) continue;
    server_cpu = true;
    const std::string leaf = base + "/" + q.leaf;
    p.ops.push_back({CgroupOp::kMkdir, leaf, ""});
    p.ops.push_back({CgroupOp::kWrite, leaf + "/cpu.max",
                     fmt::format("{} {}", quota_of(q.share), kCfsPeriodUs)});
    move_all(p, q.pids, leaf);
    p.cgroups.push_back(leaf);
  }
  const bool client_cpu_v2 = cpu_v2 && client_cpu > 0;
  const bool client_io_v2 = io_v2 && client_disk.wanted;
  if (client_cpu_v2 || client_io_v2) {
    const std::string leaf = base + "/client";
    p.ops.push_back({CgroupOp::kMkdir, leaf, ""});
    if (client_cpu_v2) {
      p.ops.push_back({CgroupOp::kWrite, leaf + "/cpu.max",
                       fmt::format("{} {}", quota_of(client_cpu), kCfsPeriodUs)});
    }
    if (client_io_v2) {
      p.ops.push_back(
          {CgroupOp::kWrite, leaf + "/io.max",
           fmt::format("{} rbps={} wbps={}", client_disk.device, bps_text(client_disk.read_bps),
                       bps_text(client_disk.write_bps))});
    }
    move_all(p, client_disk.pids, leaf);
    p.cgroups.push_back(leaf);
  }
  if (server_cpu || server_io) {
    p.ops.push_back({CgroupOp::kMkdir, base + "/server", ""});
    // With the cpu quota in v2 smbd and nfsd stay in their own leaves; io.max
    // still covers them.
    if (server_io) {
      move_all(p, server_disk.pids, base + "/server", cpu_v2 ? quota_pids : std::vector<int>{});
    }
    p.cgroups.push_back(base + "/server");
  }
  p.cgroups.push_back(base);
}

}  // namespace

ThrottlePlan plan_throttle(const CgroupLayout& l, const LabThrottle& want,
                           const std::string& device, const std::vector<int>& smbd_pids,
                           const std::vector<int>& server_pids, const std::string& name,
                           const std::vector<int>& nfsd_pids, const ClientTargets& client) {
  CP_CHECK(name.rfind(kCgroupPrefix, 0) == 0);
  ThrottlePlan p;
  const bool server_io = want.disk_read_bps > 0 || want.disk_write_bps > 0;
  const bool client_io = want.client_disk_read_bps > 0 || want.client_disk_write_bps > 0;
  const bool server_cpu = want.smbd_cpu > 0 || want.nfsd_cpu > 0;
  const bool cpu = server_cpu || want.client_cpu > 0;
  const bool io = server_io || client_io;
  CP_CHECK(!server_io || !device.empty());
  CP_CHECK(!client_io || !client.device.empty());
  const bool cpu_v1 = cpu && !l.cpu_v1.empty();
  const bool io_v1 = io && !l.blkio_v1.empty();
  const bool cpu_v2 = cpu && !cpu_v1 && !l.v2.empty() && has(l.v2_controllers, "cpu");
  const bool io_v2 = io && !io_v1 && !l.v2.empty() && has(l.v2_controllers, "io");
  if (cpu && !cpu_v1 && !cpu_v2) {
    throw Error(
        ErrorKind::kUnsupported,
        fmt::format("cannot limit {}'s CPU: this machine has no cgroup cpu controller (neither a "
                    "v1 cpu hierarchy nor cpu in cgroup v2's cgroup.controllers)",
                    server_cpu ? "a file server" : "the client host"),
        "enable the cpu controller (v2: echo +cpu > <cgroup2 mount>/cgroup.subtree_control)");
  }
  if (io && !io_v1 && !io_v2) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("cannot limit the {} disk: this machine has no cgroup blkio/io "
                            "controller",
                            server_io ? "server" : "client"),
                "enable the io controller (v2: echo +io > <cgroup2 mount>/cgroup.subtree_control)");
  }
  // Each quota'd server in a group of its own: smbd, ganesha.nfsd; the client
  // host's processes in a third.
  const std::vector<CpuQuota> quotas = {{"smbd", want.smbd_cpu, smbd_pids},
                                        {"nfsd", want.nfsd_cpu, nfsd_pids},
                                        {"client", want.client_cpu, client.pids}};
  const DiskLimit server_disk{server_io,           "server",   device, want.disk_read_bps,
                              want.disk_write_bps, server_pids};
  const DiskLimit client_disk{
      client_io,  "client", client.device, want.client_disk_read_bps, want.client_disk_write_bps,
      client.pids};
  plan_v1(l, name, cpu_v1, io_v1, quotas, {server_disk, client_disk}, p);
  if (cpu_v2 || io_v2) {
    std::vector<int> quota_pids = smbd_pids;
    quota_pids.insert(quota_pids.end(), nfsd_pids.begin(), nfsd_pids.end());
    plan_v2(l, name, cpu_v2, io_v2, quotas, server_disk, client_disk, want.client_cpu, quota_pids,
            p);
  }
  return p;
}

std::string cgroup_root_of(const std::string& dir) {
  const std::string marker = std::string("/") + kCgroupPrefix;
  const size_t at = dir.find(marker);
  if (at == std::string::npos || at == 0) return {};
  return dir.substr(0, at);
}

void remove_throttle_cgroups(const LabThrottle& t) {
  std::vector<std::string> problems;
  for (const std::string& dir : t.cgroups) {
    const std::string root = cgroup_root_of(dir);
    if (root.empty() || !sys::exists(dir)) continue;
    // A process in the group may fork between the move and the rmdir (smbd does, per
    // connection), and the child lands in the group: EBUSY. Move again and retry, for
    // up to about a second.
    int err = 0;
    for (int attempt = 0; attempt < 20; ++attempt) {
      for (int pid : sys::parse_pids(cp::read_file(dir + "/cgroup.procs").value_or(""))) {
        write_control(root + "/cgroup.procs", std::to_string(pid));  // gone meanwhile: fine
      }
      err = ::rmdir(dir.c_str()) == 0 ? 0 : errno;
      if (err != EBUSY) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (err != 0 && err != ENOENT) {
      problems.push_back(fmt::format("rmdir {}: {}", dir, errno_text(err)));
    }
  }
  if (!problems.empty()) {
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
    throw Error(ErrorKind::kIo, "cannot remove the lab's throttle cgroups: " + msg,
                "see what still runs in them (cat <dir>/cgroup.procs), then `chokepoint lab "
                "throttle --clear` again");
  }
}

std::string throttle_text(const LabThrottle& t) {
  std::vector<std::string> parts;
  if (t.smbd_cpu > 0) parts.push_back(fmt::format("smbd CPU {:g}% of a core", t.smbd_cpu * 100));
  if (t.nfsd_cpu > 0) {
    parts.push_back(fmt::format("ganesha.nfsd CPU {:g}% of a core", t.nfsd_cpu * 100));
  }
  if (t.disk_read_bps > 0) {
    parts.push_back("server disk read " + format_mbps(static_cast<double>(t.disk_read_bps)));
  }
  if (t.disk_write_bps > 0) {
    parts.push_back("server disk write " + format_mbps(static_cast<double>(t.disk_write_bps)));
  }
  if (t.client_cpu > 0) {
    parts.push_back(fmt::format("client CPU {:g}% of a core", t.client_cpu * 100));
  }
  if (t.client_disk_read_bps > 0) {
    parts.push_back("client disk read " + format_mbps(static_cast<double>(t.client_disk_read_bps)));
  }
  if (t.client_disk_write_bps > 0) {
    parts.push_back("client disk write " +
                    format_mbps(static_cast<double>(t.client_disk_write_bps)));
  }
  if (parts.empty()) return "none";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// Applies the plan's operations; the first failure (other than a process
// that exited before it could move) throws.
void apply_plan(const ThrottlePlan& p) {
  for (const CgroupOp& op : p.ops) {
    int err = 0;
    switch (op.kind) {
      case CgroupOp::kMkdir:
        if (::mkdir(op.path.c_str(), 0755) != 0 && errno != EEXIST) err = errno;
        break;
      case CgroupOp::kWrite:
        err = write_control(op.path, op.value);
        break;
      case CgroupOp::kMove:
        err = write_control(op.path, op.value);
        if (err == ESRCH) err = 0;
        break;
    }
    if (err != 0) {
      throw Error(
          ErrorKind::kIo,
          fmt::format("cannot {} {}{}: {}", op.kind == CgroupOp::kMkdir ? "create" : "write",
                      op.path, op.value.empty() ? "" : " ('" + op.value + "')", errno_text(err)),
          "check that the cgroup controller is mounted and writable by root");
    }
  }
}

}  // namespace cp::lab
