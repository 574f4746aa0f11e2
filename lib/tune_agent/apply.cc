#include "tune_agent/apply.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/process.h"
#include "core/text.h"
#include "probe/sysinfo.h"
#include "tune_agent/detail.h"

namespace cp::tune {
namespace detail {

void write_file(const std::string& path, const std::string& content) {
  // No O_TRUNC before the checks: a file that fails them stays as it was.
  // Kernel files cannot be truncated: they take the one write.
  const bool kernel = is_kernel_file(path);
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (kernel ? O_TRUNC : 0), 0644);
  if (fd < 0) {
    const int e = errno;
    throw Error(ErrorKind::kIo,
                fmt::format("cannot open {} for writing: {}", path,
                            e == ELOOP ? "it is a symlink, which chokepoint never follows"
                                       : std::strerror(e)),
                e == ELOOP ? "remove the symlink; chokepoint writes only the file itself" : "");
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "it is not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = fmt::format("it belongs to uid {}, not to this agent's uid {}", st.st_uid, ::geteuid());
  } else if (!kernel && ::ftruncate(fd, 0) != 0) {
    why = std::strerror(errno);
  }
  if (!why.empty()) {
    ::close(fd);
    throw Error(ErrorKind::kIo, fmt::format("refusing to write {}: {}", path, why),
                "chokepoint writes only regular files its own user owns");
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw Error(ErrorKind::kIo, fmt::format("cannot write '{}' to {}: {}",
                                              trim(content).substr(0, 80), path, std::strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

bool is_kernel_file(const std::string& path) {
  return path.rfind("/proc/", 0) == 0 || path.rfind("/sys/", 0) == 0;
}

std::string sysctl_path(const std::string& key) {
  std::string p = key;
  std::replace(p.begin(), p.end(), '.', '/');
  return "/proc/sys/" + p;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace detail

namespace {

using detail::dir_of;
using detail::is_kernel_file;
using detail::run_read;
using detail::sysctl_path;

// The whole disk under `dir` ("loop3", "sda"), from sysfs.
std::string disk_under(const Knob& knob, const std::string& dir) {
  if (dir.empty()) {
    throw Error(ErrorKind::kConfig,
                fmt::format("knob {} needs the {}'s disk_dir", knob.name, knob.endpoint));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw Error(ErrorKind::kConfig,
                fmt::format("knob {}: cannot stat {}: {}", knob.name, dir, std::strerror(errno)),
                "set disk_dir in the plan's [" + knob.endpoint + "] section");
  }
  const auto dev = probe::block_device_facts(major(st.st_dev), minor(st.st_dev));
  if (!dev) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: {} is not on a block device this host's sysfs knows "
                            "(tmpfs, NFS, a btrfs subvolume)",
                            knob.name, dir),
                "point disk_dir at a directory on the disk you mean to tune");
  }
  return dev->disk;
}

Action run(std::vector<std::string> argv) {
  Action a;
  a.kind = "run";
  a.argv = std::move(argv);
  return a;
}
Action write(std::string path, std::string content) {
  Action a;
  a.kind = "write";
  a.path = std::move(path);
  a.content = std::move(content);
  return a;
}
Action remove(std::string path) {
  Action a;
  a.kind = "remove";
  a.path = std::move(path);
  return a;
}

std::string samba_conf_for(const Knob& knob, const Where& where) {
  std::string how;
  std::string conf = probe::samba_config_path(where.samba_conf, &how);
  struct stat st {};
  if (::stat(conf.c_str(), &st) != 0) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: no smb.conf at {} ({}): is Samba installed here?", knob.name,
                            conf, how),
                "set samba_conf in the plan's [server] section");
  }
  return conf;
}

Resolved resolve_samba(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r;
  const std::string conf = samba_conf_for(knob, where);
  r.target = conf;
  RunResult tp = run_command({"testparm", "-s", "--parameter-name=" + knob.param, conf}, {}, 60);
  if (tp.exit_code != 0) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: `testparm` cannot read '{}' from {}: {}", knob.name,
                            knob.param, conf, trim(tp.err)),
                "install samba-common-bin (testparm), or fix smb.conf");
  }
  r.original = trim(tp.out);
  std::string conf_text;
  if (!read_file(conf, &conf_text)) {
    throw Error(ErrorKind::kIo,
                fmt::format("knob {}: cannot read {}: {}", knob.name, conf, std::strerror(errno)));
  }
  const std::string dropin = dir_of(conf) + "/chokepoint-tune.conf";
  std::string dropin_text;
  const bool dropin_existed = read_file(dropin, &dropin_text);
  const std::vector<std::string> reload = {"smbcontrol", "-s", conf, "smbd", "reload-config"};
  // Other knobs of a grid keep their lines; the knob's companions go beside it.
  std::string merged = merge_samba_dropin(dropin_existed ? dropin_text : "", knob.param, value);
  for (const auto& [p, v] : knob.with) merged = merge_samba_dropin(merged, p, v);
  r.apply.push_back(write(dropin, merged));
  const std::string with_include = add_samba_include(conf_text, dropin);
  if (with_include != conf_text) {
    r.apply.push_back(write(conf, with_include));
    r.apply.back().note = fmt::format(
        "its text with `include = {}` added as the last line of "
        "[global]",
        dropin);
  }
  r.apply.push_back(run(reload));
  r.revert.push_back(write(conf, conf_text));
  r.revert.back().note = fmt::format(
      "its original text, byte for byte ({} bytes, kept in the journal)", conf_text.size());
  r.revert.push_back(dropin_existed ? write(dropin, dropin_text) : remove(dropin));
  r.revert.push_back(run(reload));
  return r;
}

// The interface holding `address` on this host, else the one routing to it.
std::string interface_for(const std::string& address) {
  RunResult a = run_command({"ip", "-o", "addr", "show", "to", address}, {}, 30);
  std::string ifname = a.exit_code == 0 ? parse_addr_ifname(a.out) : "";
  if (!ifname.empty()) return ifname;
  RunResult r = run_command({"ip", "-o", "route", "get", address}, {}, 30);
  return r.exit_code == 0 ? parse_route_dev(r.out) : "";
}

Resolved resolve_mtu(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r;
  if (where.data_address.empty()) {
    throw Error(ErrorKind::kConfig, fmt::format("knob {} needs the data address", knob.name),
                "set data_address in the plan's [tcp] section");
  }
  const std::string ifname = interface_for(where.data_address);
  if (ifname.empty() || ifname == "lo") {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: no interface other than loopback carries {} on this host",
                            knob.name, where.data_address),
                "name the data path's address with the plan's data_address");
  }
  r.target = ifname;
  RunResult l = run_command({"ip", "-o", "link", "show", "dev", ifname}, {}, 30);
  const int mtu = parse_link_mtu(l.out);
  if (l.exit_code != 0 || mtu <= 0) {
    throw Error(ErrorKind::kUnsupported, fmt::format("knob {}: cannot read the MTU of {}: {}",
                                                     knob.name, ifname, trim(l.err)));
  }
  const unsigned long want = std::stoul(value);
  if (want < 576 || want > 65536) {
    throw Error(ErrorKind::kUsage,
                fmt::format("knob {}: MTU {} is outside 576..65536", knob.name, value));
  }
  r.original = std::to_string(mtu);
  const char* ssh = std::getenv("SSH_CONNECTION");
  const std::string ssh_local = ssh_local_address(ssh);
  r.cuts_ssh = !ssh_local.empty() && interface_for(ssh_local) == ifname;
  if (r.cuts_ssh && !where.console) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: {} carries this host's SSH connection ({}): a wrong MTU "
                            "there can cut it",
                            knob.name, ifname, ssh_local),
                "reach the host over a management address on another interface (the plan's "
                "data_address names the data path), or pass --i-have-console: the agent then "
                "reverts by itself unless the orchestrator confirms it still reaches the host");
  }
  r.apply.push_back(run({"ip", "link", "set", "dev", ifname, "mtu", value}));
  r.revert.push_back(run({"ip", "link", "set", "dev", ifname, "mtu", r.original}));
  return r;
}

// netatalk's afp.conf: the one given, else the usual places of netatalk 3.
std::string afp_conf_for(const Knob& knob, const Where& where) {
  struct stat st {};
  if (!where.afp_conf.empty()) {
    if (::stat(where.afp_conf.c_str(), &st) != 0) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("knob {}: afp.conf {} cannot be read: {}", knob.name, where.afp_conf,
                              std::strerror(errno)),
                  "give the afp.conf afpd reads with --afp-conf (`afpd -V` prints its path)");
    }
    return where.afp_conf;
  }
  for (const char* p : {"/etc/netatalk/afp.conf", "/usr/local/etc/afp.conf", "/etc/afp.conf"}) {
    if (::stat(p, &st) == 0) return p;
  }
  throw Error(ErrorKind::kUnsupported,
              fmt::format("knob {}: no afp.conf in /etc/netatalk, /usr/local/etc or /etc: is "
                          "netatalk installed here?",
                          knob.name),
              "give the afp.conf afpd reads with --afp-conf (`afpd -V` prints its path)");
}

// netatalk 3's defaults when afp.conf does not set the parameter.
std::string afp_default(const std::string& param) {
  if (param == "server quantum") return "1048576";
  if (param == "dsireadbuf") return "12";
  return "";
}

Resolved resolve_afp(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r;
  const std::string conf = afp_conf_for(knob, where);
  r.target = conf;
  std::string text;
  if (!read_file(conf, &text)) {
    throw Error(ErrorKind::kIo,
                fmt::format("knob {}: cannot read {}: {}", knob.name, conf, std::strerror(errno)));
  }
  std::vector<std::string> restart;
  if (!where.afp_restart.empty()) {
    restart = {"sh", "-c", where.afp_restart};
  } else if (run_command({"systemctl", "cat", "netatalk.service"}, {}, 30).exit_code == 0) {
    restart = {"systemctl", "restart", "netatalk"};
  } else {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("knob {}: afpd reads afp.conf at start only, and no netatalk "
                            "service is known here to restart it",
                            knob.name),
                "give the command that restarts afpd with --afp-restart 'COMMAND'");
  }
  std::string current;
  const std::string changed = set_afp_param(text, knob.param, value, &current);
  r.original = current.empty() ? afp_default(knob.param) : current;
  r.apply.push_back(write(conf, changed));
  r.apply.back().note = fmt::format("its text with '{} = {}' in [Global]", knob.param, value);
  r.apply.push_back(run(restart));
  r.revert.push_back(write(conf, text));
  r.revert.back().note =
      fmt::format("its original text, byte for byte ({} bytes, kept in the journal)", text.size());
  r.revert.push_back(run(restart));
  return r;
}

Resolved resolve_here(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r;
  switch (knob.mechanism) {
    case Mechanism::kReadahead: {
      const std::string dev = "/dev/" + disk_under(knob, where.disk_dir);
      r.target = dev;
      RunResult got = run_read(knob, {"blockdev", "--getra", dev});
      if (got.exit_code != 0) {
        throw Error(
            ErrorKind::kUnsupported,
            fmt::format("knob {}: `blockdev --getra {}` failed: {}", knob.name, dev, trim(got.err)),
            "the device node must be openable on that host (root)");
      }
      const uint64_t sectors = std::stoull(std::string(trim(got.out)));
      r.original = std::to_string(sectors * 512);
      const uint64_t bytes = std::stoull(value);
      if (bytes % 512 != 0) {
        throw Error(ErrorKind::kUsage,
                    fmt::format("knob {}: {} bytes is not a whole number of 512-byte sectors",
                                knob.name, value),
                    "give a multiple of 512 (4K, 128K, 1M)");
      }
      r.apply.push_back(run({"blockdev", "--setra", std::to_string(bytes / 512), dev}));
      r.revert.push_back(run({"blockdev", "--setra", std::to_string(sectors), dev}));
      return r;
    }
    case Mechanism::kQueueAttr: {
      const std::string disk = disk_under(knob, where.disk_dir);
      const std::string path = "/sys/block/" + disk + "/queue/" + knob.param;
      r.target = path;
      std::string text;
      if (!read_file(path, &text)) {
        throw Error(ErrorKind::kUnsupported, fmt::format("knob {}: {} cannot be read: {}",
                                                         knob.name, path, std::strerror(errno)));
      }
      r.original = knob.param == "scheduler" ? probe::parse_scheduler(text) : trim(text);
      r.apply.push_back(write(path, value + "\n"));
      r.revert.push_back(write(path, r.original + "\n"));
      return r;
    }
    case Mechanism::kWriteCache: {
      const std::string disk = disk_under(knob, where.disk_dir);
      r.target = "/dev/" + disk;
      std::string why;
      for (const char* prefix : {"loop", "ram", "zram", "nbd", "dm-", "md", "vd", "xvd"}) {
        if (disk.rfind(prefix, 0) == 0) {
          why = fmt::format("{} is a {} device, which has no drive write cache to switch", disk,
                            std::string(prefix) == "loop" ? "loop" : "virtual or stacked");
        }
      }
      if (why.empty() && !std::filesystem::exists("/sys/block/" + disk + "/device/scsi_disk")) {
        why = fmt::format("{} is not an ATA/SCSI disk (hdparm -W drives those only)", disk);
      }
      if (!why.empty()) {
        throw Error(ErrorKind::kUnsupported, fmt::format("knob {}: {}", knob.name, why),
                    "tune a physical SATA/SAS disk, or leave this knob out");
      }
      RunResult got = run_read(knob, {"hdparm", "-W", r.target});
      const size_t eq = got.out.find("write-caching =");
      if (got.exit_code != 0 || eq == std::string::npos) {
        throw Error(ErrorKind::kUnsupported,
                    fmt::format("knob {}: `hdparm -W {}` cannot read the write cache: {}",
                                knob.name, r.target, trim(got.err)),
                    "install hdparm on that host; the drive must report its cache");
      }
      r.original = trim(got.out.substr(eq + 15)).substr(0, 1);
      r.apply.push_back(run({"hdparm", "-W", value, r.target}));
      r.revert.push_back(run({"hdparm", "-W", r.original, r.target}));
      return r;
    }
    case Mechanism::kSysctl: {
      const std::string path = sysctl_path(knob.param);
      r.target = knob.param;
      std::string text;
      if (!read_file(path, &text)) {
        throw Error(ErrorKind::kUnsupported, fmt::format("knob {}: {} cannot be read: {}",
                                                         knob.name, path, std::strerror(errno)));
      }
      r.original = squeeze_ws(text);
      r.apply.push_back(write(path, value + "\n"));
      r.revert.push_back(write(path, r.original + "\n"));
      return r;
    }
    case Mechanism::kSamba:
      return resolve_samba(knob, value, where);
    case Mechanism::kMtu:
      return resolve_mtu(knob, value, where);
    case Mechanism::kAfpConf:
      return resolve_afp(knob, value, where);
    case Mechanism::kClientOption:
      throw Error(
          ErrorKind::kPeer,
          fmt::format("knob {} is a client option: the orchestrator applies it", knob.name));
  }
  return r;
}

}  // namespace

std::string Action::display() const {
  const std::string pre = sudo ? "sudo -n " : "";
  if (kind == "run") return pre + shell_join(argv);
  if (kind == "remove") return pre + "rm -f " + shell_quote(path);
  if (is_kernel_file(path)) {
    return sudo ? fmt::format("echo {} | sudo -n tee {}", shell_quote(std::string(trim(content))),
                              path)
                : fmt::format("echo {} > {}", shell_quote(std::string(trim(content))), path);
  }
  if (!note.empty()) return fmt::format("{}write {}: {}", sudo ? "sudo -n tee: " : "", path, note);
  if (sudo) return fmt::format("sudo -n tee {} <<'EOF'\n{}EOF", shell_quote(path), content);
  return fmt::format("cat > {} <<'EOF'\n{}EOF", shell_quote(path), content);
}

Resolved resolve(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r = resolve_here(knob, value, where);
  detail::mark_sudo(knob, r);
  return r;
}

void run_actions(const Knob& knob, const std::vector<Action>& actions) {
  check_privilege(knob, actions);
  const bool sudo = detail::needs_sudo(knob);
  for (const auto& a : actions) {
    if (sudo) {
      std::vector<std::string> argv = {"sudo", "-n"};
      for (const auto& w : detail::privileged_argv(a)) argv.push_back(w);
      RunResult res = run_command(argv, a.kind == "write" ? a.content : std::string(), 60);
      if (res.exit_code != 0) {
        throw Error(ErrorKind::kIo, fmt::format("knob {}: `{}` failed (exit {}): {}", knob.name,
                                                shell_join(argv), res.exit_code, trim(res.err)));
      }
      continue;
    }
    if (a.kind == "run") {
      std::vector<std::string> argv = a.argv;
      argv[0] = detail::full_path(argv[0]);  // a non-root PATH may lack the sbin directories
      RunResult res = run_command(argv, {}, 60);
      if (res.exit_code != 0) {
        throw Error(ErrorKind::kIo,
                    fmt::format("knob {}: `{}` failed (exit {}): {}", knob.name, a.display(),
                                res.exit_code, trim(res.err + " " + res.out)));
      }
    } else if (a.kind == "write") {
      try {
        detail::write_file(a.path, a.content);
      } catch (const Error& e) {
        throw Error(ErrorKind::kIo, fmt::format("knob {}: {}", knob.name, e.what()));
      }
    } else if (a.kind == "remove") {
      if (::unlink(a.path.c_str()) != 0 && errno != ENOENT) {
        throw Error(ErrorKind::kIo, fmt::format("knob {}: cannot remove {}: {}", knob.name, a.path,
                                                std::strerror(errno)));
      }
    }
  }
}

}  // namespace cp::tune
