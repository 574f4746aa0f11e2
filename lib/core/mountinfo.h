// /proc/PID/mountinfo, parsed once for everyone who needs it (the disk
// probe's mount lookup, CPU quotas, the lab's cgroup mounts and throttles).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cp {

struct MountInfoLine {
  std::string dev;            // "MAJ:MIN"
  std::string root;           // the mounted subtree of the filesystem ("/" for all of it)
  std::string mount_point;    // where it is mounted
  std::string options;        // per-mount options ("rw,relatime")
  std::string fstype;         // "ext4", "cgroup", "cgroup2", ...
  std::string source;         // "/dev/vda", "tmpfs", ...
  std::string super_options;  // per-superblock options ("rw,cpu,cpuacct")
};

// "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
// per line; paths unescaped (\040 is a space). Malformed lines are skipped.
std::vector<MountInfoLine> parse_mountinfo(std::string_view text);

// mountinfo writes space, tab, newline and backslash as \ooo.
std::string unescape_mountinfo(std::string_view s);

// `path` (absolute, symlink-free) is `mount_point` or below it: "/mnt/nas/x" is under
// "/mnt/nas", "/mnt/nasother" is not; everything is under "/".
bool under_mount_point(std::string_view path, std::string_view mount_point);

// A mount, as the lookup below reports it.
struct MountEntry {
  std::string mount_point;  // "" when no mount matched
  std::string fstype;       // "ext4", "cifs", "nfs4", "fuse.sshfs", ...
  std::string source;       // "/dev/vda1", "tmpfs", "//nas/share", "server:/export", ...
  std::string options;      // per-mount and superblock options: "rw,relatime,vers=3.1.1,..."
};
// The one "which mount holds this path" lookup (the disk probe's and the path
// driver's): the mount in `mountinfo` text holding the absolute,
// symlink-free `path`. With `dev` ("MAJ:MIN" of the path's st_dev; "" none)
// mounts of that device are preferred (a bind mount of another filesystem
// may sit deeper); then the deepest mount point; then the last listed (it
// hides earlier ones on the same point). Empty mount_point when none holds it.
MountEntry mount_holding(std::string_view mountinfo, std::string_view path,
                         std::string_view dev = {});

// The non-empty pieces of `s` between `sep`s ("rw,cpu" -> {"rw", "cpu"}).
std::vector<std::string_view> split_nonempty(std::string_view s, char sep);

}  // namespace cp
