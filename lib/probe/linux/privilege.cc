// Linux: what an agent without root cannot read, and what it does instead (platform.h).
#include <dirent.h>
#include <unistd.h>

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "core/error.h"
#include "core/mountinfo.h"
#include "core/process.h"
#include "core/units.h"
#include "probe/platform.h"

namespace cp::probe::os {

namespace {

// Whether another user's process has an unreadable ns/net link here: ptrace
// rights decide (root or CAP_SYS_PTRACE), so one such process is enough.
bool foreign_netns_hidden(const std::string& proc_root) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return false;
  bool hidden = false;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int pid = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || p != name.data() + name.size()) continue;
    const std::string base = fmt::format("{}/{}", proc_root, pid);
    char buf[64];
    if (::readlink((base + "/ns/net").c_str(), buf, sizeof buf) >= 0) continue;
    // EACCES/EPERM: not ours to inspect; ENOENT: gone or a fake tree without it.
    if (errno == EACCES || errno == EPERM) {
      hidden = true;
      break;
    }
  }
  ::closedir(dir);
  return hidden;
}

std::string find_in_path(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/bin:/bin";
  for (std::string_view dir : split_nonempty(path, ':')) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace

std::vector<DegradedFact> degraded_facts(const PrivilegeContext& ctx) {
  std::vector<DegradedFact> out;
  if (!ctx.root && foreign_netns_hidden(ctx.proc_root)) {
    out.push_back({"process_netns",
                   "other users' processes counted as this host's: their network namespace "
                   "(/proc/PID/ns/net) is unreadable",
                   "root or CAP_SYS_PTRACE on the server"});
  }
  if (ctx.samba && !ctx.smbstatus_ok) {
    out.push_back({"smb_negotiated",
                   ctx.smbstatus_found
                       ? "not recorded: smbstatus --json was refused (it reads smbd's lock files)"
                       : "not recorded: there is no smbstatus on the server",
                   ctx.smbstatus_found ? "root on the server (smbstatus reads smbd's state)"
                                       : "root on the server, with Samba's smbstatus installed"});
  }
  if (ctx.disk_fs_type == "zfs") {
    const CacheVerdict v = read_cache_verdict("zfs", true, 0, ctx.arc ? ctx.arc->c_max : 0);
    out.push_back(
        {"disk_cache_bypass",
         ctx.arc && ctx.arc->c_max > 0
             ? fmt::format("disk reads of files up to the ARC's c_max ({}) flagged "
                           "cache_possible: O_DIRECT and posix_fadvise do not keep ZFS's ARC "
                           "out; [disk] sizes above it are read from the disks",
                           format_size(ctx.arc->c_max))
             : v.reason,
         "root on the server: `zfs set primarycache=metadata DATASET` for the test (or "
         "`echo 3 > /proc/sys/vm/drop_caches`, which shrinks the ARC)"});
  }
  return out;
}

PrivilegeContext privilege_context(const std::string& disk_fs_type, bool samba,
                                   const std::string& smb_conf) {
  PrivilegeContext c;
  c.root = ::geteuid() == 0;
  c.disk_fs_type = disk_fs_type;
  if (disk_fs_type == "zfs") c.arc = read_arc_stats();
  c.samba = samba;
  if (samba) {
    const std::string smbstatus = find_in_path("smbstatus");
    c.smbstatus_found = !smbstatus.empty();
    if (c.smbstatus_found) {
      std::vector<std::string> argv{smbstatus, "--json"};
      if (!smb_conf.empty()) {
        argv.push_back("-s");
        argv.push_back(smb_conf);
      }
      try {
        RunResult r = run_command(argv, "", 30);
        boost::system::error_code ec;
        const boost::json::value v = boost::json::parse(r.out, ec);
        c.smbstatus_ok = r.exit_code == 0 && !ec && v.is_object();
      } catch (const Error&) {
        c.smbstatus_ok = false;
      }
    }
  }
  return c;
}

}  // namespace cp::probe::os
