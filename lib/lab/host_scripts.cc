// Bringing a lab host up: its cgroup mounts and the scripts and argv that
// set up its namespaces and start its sshd.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"
#include "lab/layout.h"

namespace cp::lab {

namespace {

// Mounts the fstype/options/mount point triples in "$@", going on past
// failures (their messages go to stderr: the host's sshd log).
#define CP_MOUNT_CGROUPS_LOOP                                                               \
  "while [ $# -ge 3 ]; do\n"                                                                \
  "  { mkdir -p \"$3\" && mount -t \"$1\" -o \"$2\" \"$1\" \"$3\"; } || echo \"cp-lab: no " \
  "$1 at $3: cgroup CPU quotas stay unseen in this host\" >&2\n"                            \
  "  shift 3\n"                                                                             \
  "done\n"

}  // namespace

std::vector<CgroupMount> host_cgroup_mounts(std::string_view mountinfo) {
  const std::string dir = kCgroupDir;
  std::vector<CgroupMount> out;
  bool dir_is_cgroup = false;
  for (const MountInfoLine& line : parse_mountinfo(mountinfo)) {
    const std::string& fstype = line.fstype;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    // Only the hierarchies' roots: a bind of a sub-cgroup elsewhere adds nothing.
    if (line.root != "/") continue;
    const std::string& point = line.mount_point;
    if (point != dir && !under_mount_point(point, dir)) continue;
    // Mount points are passed as arguments, but keep to plain names all the same.
    if (point.find_first_of(" \t\n\\") != std::string::npos) continue;
    std::string options = "ro,nosuid,nodev,noexec";
    for (std::string_view opt : split_nonempty(line.super_options, ',')) {
      if (opt == "rw" || opt == "ro" || opt.rfind("release_agent=", 0) == 0) continue;
      options += ",";
      options += opt;
    }
    if (point == dir) dir_is_cgroup = true;
    out.push_back({fstype, options, point});
  }
  if (out.empty()) return out;
  if (dir_is_cgroup) {
    // The unified hierarchy is the dir itself (a pure v2 host); nothing can be
    // mounted inside it, so it alone is mounted.
    std::vector<CgroupMount> only;
    for (auto& m : out)
      if (m.mount_point == dir) only.push_back(m);
    return only;
  }
  out.insert(out.begin(), {"tmpfs", "nosuid,nodev,noexec,mode=0755,size=1m", dir});
  out.push_back({"tmpfs", "remount,ro,nosuid,nodev,noexec", dir});
  return out;
}

// $0 is a name for ps; $1 hostname, $2 ram dir, $3 ram size in bytes, $4
// loop device, $5 disk dir, $6 sshd_config, $7 sshd log. Runs in the host's
// fresh mount (private) and UTS namespaces, inside its network namespace.
// Then the cgroup mounts, three arguments each.
const char* const kHostSetupScript =
    "set -e\n"
    // sshd's privilege-separation dir, and nothing of the root namespace's /run.
    "mount -t tmpfs -o mode=0755,size=64m cp-run /run\n"
    "mkdir -m 0755 /run/sshd\n"
    "mount -t tmpfs -o mode=1777 cp-shm /dev/shm\n"
    "printf '%s\\n' \"$1\" > /proc/sys/kernel/hostname\n"
    "mount -t tmpfs -o \"size=$3\" cp-ram \"$2\"\n"
    "mount -t ext4 \"$4\" \"$5\"\n"
    "config=$6 log=$7\n"
    "shift 7\n" CP_MOUNT_CGROUPS_LOOP "exec /usr/sbin/sshd -D -f \"$config\" -E \"$log\"\n";

// $0 is the cgroup dir: nothing is done when a mount is there already; then
// the mounts, three arguments each.
const char* const kHostCgroupScript =
    "grep -q \" $0 \" /proc/self/mountinfo && exit 0\n" CP_MOUNT_CGROUPS_LOOP;

#undef CP_MOUNT_CGROUPS_LOOP

std::vector<std::string> host_cgroups_argv(const LabHost& host,
                                           const std::vector<CgroupMount>& cgroups) {
  CP_CHECK(host.sshd_pid > 0);
  std::vector<std::string> argv = {
      "nsenter",         "-t",      std::to_string(host.sshd_pid), "-m", "--", "sh", "-c",
      kHostCgroupScript, kCgroupDir};
  for (const CgroupMount& m : cgroups)
    argv.insert(argv.end(), {m.fstype, m.options, m.mount_point});
  return argv;
}

std::vector<std::string> host_start_argv(const LabState& state, const LabHost& host,
                                         const std::vector<CgroupMount>& cgroups) {
  const HostFiles f = host_files(state, host);
  CP_CHECK(!host.loop_device.empty());
  // setsid -f: a new session, forked off so the caller does not wait for it;
  // the first sh sends its stdio to the log so no caller's pipe stays open.
  std::vector<std::string> argv = {"setsid",
                                   "-f",
                                   "sh",
                                   "-c",
                                   "exec </dev/null >>\"$1\" 2>&1; shift; exec \"$@\"",
                                   "cp-lab-start",
                                   f.sshd_log,
                                   "ip",
                                   "netns",
                                   "exec",
                                   host.netns,
                                   "unshare",
                                   "--mount",
                                   "--uts",
                                   "--propagation",
                                   "private",
                                   "--",
                                   "sh",
                                   "-c",
                                   kHostSetupScript,
                                   "cp-lab-" + host.role,
                                   host.hostname,
                                   host.ram_dir,
                                   std::to_string(state.options.ram_bytes),
                                   host.loop_device,
                                   host.disk_dir,
                                   f.sshd_config,
                                   f.sshd_log};
  for (const CgroupMount& m : cgroups)
    argv.insert(argv.end(), {m.fstype, m.options, m.mount_point});
  return argv;
}

}  // namespace cp::lab
