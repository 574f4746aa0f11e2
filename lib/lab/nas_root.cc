#include "lab/nas_root.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/process.h"
#include "lab/layout.h"
#include "lab/sys.h"

namespace cp::lab {
namespace {

constexpr const char* kBusybox = "/bin/busybox";

// $1 the root, then the dirs to bind at their own paths inside it.
constexpr const char* kMountScript =
    "set -e\n"
    "r=$1; shift\n"
    "mount -t proc cp-nas-proc \"$r/proc\"\n"
    "mount --rbind /sys \"$r/sys\"\n"
    "mount --rbind /dev \"$r/dev\"\n"
    "for d; do mount --bind \"$d\" \"$r$d\"; done\n";

}  // namespace

std::string nas_root_dir(const LabState& s) { return host_files(s, s.server).dir + "/nasroot"; }

void make_nas_root(const LabState& s) {
  // A dynamic BusyBox would need the very libraries the profile leaves out.
  RunResult f = run_command({"file", "-b", "-L", kBusybox}, "", 10);
  if (access(kBusybox, X_OK) != 0 || f.out.find("statically linked") == std::string::npos) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("the nas server profile needs a static BusyBox at {}", kBusybox),
                "install Debian's busybox-static (scripts/install-deps.sh does)");
  }
  const std::string r = nas_root_dir(s);
  // sshd's ChrootDirectory: every component root-owned and writable by root only.
  sys::make_dirs(r, 0755);
  for (const char* d :
       {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/etc", "/proc", "/sys", "/dev"}) {
    sys::make_dirs(r + d, 0755);
  }
  sys::make_dirs(r + "/root", 0700);
  sys::make_dirs(r + "/tmp", 01777);
  ::chmod((r + "/tmp").c_str(), 01777);
  for (const std::string& d : {s.server.ram_dir, s.server.disk_dir}) sys::make_dirs(r + d, 0755);
  // The unprivileged login's home (--server-login user), bound there like the dirs.
  if (server_login_is_user(s)) sys::make_dirs(r + server_home(s), 0755);
  run_checked({"cp", kBusybox, r + "/bin/busybox"});
  run_checked({"chroot", r, "/bin/busybox", "--install", "-s"});
  sys::write_file(
      r + "/bin/bash",
      "#!/bin/sh\n# root's login shell is bash: BusyBox's sh stands in\nexec /bin/sh \"$@\"\n",
      0755);
  sys::write_file(r + "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0644);
  sys::write_file(r + "/etc/group", "root:x:0:\n", 0644);
  sys::write_file(r + "/etc/hosts", "127.0.0.1 localhost\n", 0644);
}

std::vector<std::string> nas_mount_argv(const LabState& s) {
  CP_CHECK(s.server.sshd_pid > 0);
  std::vector<std::string> argv{"nsenter",
                                "-t",
                                std::to_string(s.server.sshd_pid),
                                "-m",
                                "--",
                                "sh",
                                "-c",
                                kMountScript,
                                "cp-lab-nas",
                                nas_root_dir(s),
                                s.server.ram_dir,
                                s.server.disk_dir};
  if (server_login_is_user(s)) argv.push_back(server_home(s));
  return argv;
}

}  // namespace cp::lab
