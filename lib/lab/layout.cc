#include "lab/layout.h"

#include "lab/ganesha.h"
#include "lab/throttle_json.h"

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"

namespace cp::lab {
namespace json = boost::json;

namespace {

LabHost make_host(const std::string& dir, const std::string& role, const std::string& netns,
                  const std::string& mgmt_address, const std::string& data_address,
                  const std::string& data_ifname) {
  LabHost h;
  h.role = role;
  h.netns = netns;
  h.alias = h.netns;
  h.hostname = h.netns;
  h.mgmt_address = mgmt_address;
  h.data_address = data_address;
  h.data_ifname = data_ifname;
  h.ram_dir = dir + "/" + role + "/ram";
  h.disk_dir = dir + "/" + role + "/disk";
  return h;
}

bool starts_with_dir(const std::string& path, const std::string& prefix) {
  return path == prefix || path.rfind(prefix + "/", 0) == 0;
}

}  // namespace

InstanceNames instance_names(int n) {
  CP_CHECK(n >= 0 && n <= kMaxInstance);
  InstanceNames x;
  x.instance = n;
  x.suffix = n == 0 ? "" : fmt::format("-{}", n);
  x.dir = kDefaultDir + x.suffix;
  x.lock_path = "/run/chokepoint-lab" + x.suffix + ".lock";
  x.server_netns = "cp-server" + x.suffix;
  x.client_netns = "cp-client" + x.suffix;
  x.switch_netns = "cp-switch" + x.suffix;
  x.server_mgmt_root_ifname = "cpm-s" + x.suffix;
  x.client_mgmt_root_ifname = "cpm-c" + x.suffix;
  if (n == 0) {
    // The historical layout, unchanged: a user's lab keeps its addresses.
    x.server_mgmt_subnet = "198.18.1.0/30";
    x.server_mgmt_root_address = "198.18.1.1";
    x.server_mgmt_address = "198.18.1.2";
    x.client_mgmt_subnet = "198.18.2.0/30";
    x.client_mgmt_root_address = "198.18.2.1";
    x.client_mgmt_address = "198.18.2.2";
    x.data_subnet = "198.18.0.0/24";
    x.server_data_address = "198.18.0.1";
    x.client_data_address = "198.18.0.2";
  } else {
    // 198.18.101-199.x for management, 198.19.1-99.x for data: clear of
    // instance 0's 198.18.0-2.x and of each other.
    const int m = 100 + n;
    x.server_mgmt_subnet = fmt::format("198.18.{}.0/30", m);
    x.server_mgmt_root_address = fmt::format("198.18.{}.1", m);
    x.server_mgmt_address = fmt::format("198.18.{}.2", m);
    x.client_mgmt_subnet = fmt::format("198.18.{}.4/30", m);
    x.client_mgmt_root_address = fmt::format("198.18.{}.5", m);
    x.client_mgmt_address = fmt::format("198.18.{}.6", m);
    x.data_subnet = fmt::format("198.19.{}.0/24", n);
    x.server_data_address = fmt::format("198.19.{}.1", n);
    x.client_data_address = fmt::format("198.19.{}.2", n);
  }
  x.share_user = kShareUser + x.suffix;
  x.cgroup_name = "chokepoint-lab" + x.suffix;
  return x;
}

int parse_instance(std::string_view text, const std::string& what) {
  int v = -1;
  if (!text.empty() && text.size() <= 3 &&
      text.find_first_not_of("0123456789") == std::string_view::npos) {
    v = std::stoi(std::string(text));
  }
  if (v < 0 || v > kMaxInstance) {
    throw Error(ErrorKind::kConfig, fmt::format("{} '{}' is not a lab instance", what, text),
                fmt::format("give a number from 0 (the default lab) to {}", kMaxInstance));
  }
  return v;
}

HostFiles host_files(const LabState& state, const LabHost& host) {
  CP_CHECK(host.role == "server" || host.role == "client");
  HostFiles f;
  f.dir = state.dir + "/" + host.role;
  f.disk_image = f.dir + "/disk.img";
  f.sshd_config = f.dir + "/sshd_config";
  f.host_key = f.dir + "/ssh_host_ed25519_key";
  f.sshd_log = f.dir + "/sshd.log";
  f.pid_file = f.dir + "/sshd.pid";
  const bool server = host.role == "server";
  const InstanceNames n = instance_names(state.instance);
  f.mgmt_root_ifname = server ? n.server_mgmt_root_ifname : n.client_mgmt_root_ifname;
  f.mgmt_root_address = server ? n.server_mgmt_root_address : n.client_mgmt_root_address;
  f.mgmt_ifname = "cpm";
  return f;
}

int host_mtu(const LabOptions& o, const std::string& role) {
  const int own = role == "server" ? o.server_mtu : o.client_mtu;
  return own > 0 ? own : o.mtu;
}

int switch_mtu(const LabOptions& o) {
  return std::max(host_mtu(o, "server"), host_mtu(o, "client"));
}

SwitchFiles switch_files(const LabState& state) {
  SwitchFiles f;
  f.dir = state.dir + "/switch";
  f.delay_line_pid = f.dir + "/delay-line.pid";
  f.delay_line_stats = f.dir + "/delay-line.stats.json";
  f.delay_line_log = f.dir + "/delay-line.log";
  return f;
}

ServerFiles server_files(const LabState& state) {
  ServerFiles f;
  f.ram_share = state.server.ram_dir + "/share";
  f.disk_share = state.server.disk_dir + "/share";
  f.ro_share = state.server.ram_dir + "/" + kReadOnlyShare;
  const std::string dir = state.dir + "/server";
  f.ftp_dir = dir + "/ftp";
  f.ftp_root = f.ftp_dir + "/root";
  f.ftp_empty = f.ftp_dir + "/empty";
  f.vsftpd_conf = f.ftp_dir + "/vsftpd.conf";
  f.vsftpd_log = f.ftp_dir + "/vsftpd.log";
  f.vsftpd_out = f.ftp_dir + "/vsftpd.out";
  f.vsftpd_pid = f.ftp_dir + "/vsftpd.pid";
  f.pam_file = f.ftp_dir + "/pam";
  f.ftps_cert = f.ftp_dir + "/ftps-cert.pem";
  f.ftps_key = f.ftp_dir + "/ftps-key.pem";
  f.samba_dir = dir + "/samba";
  f.smb_conf = f.samba_dir + "/smb.conf";
  f.smbd_out = f.samba_dir + "/smbd.out";
  f.smbd_pid = f.samba_dir + "/smbd.pid";
  return f;
}

bool server_login_is_user(const LabState& state) { return state.options.server_login == "user"; }

std::string server_home(const LabState& state) { return state.dir + "/server/home"; }

std::pair<std::string, std::string> diagnosis_dirs(const LabState& state, const LabHost& host) {
  if (host.role == "server" && server_login_is_user(state)) {
    const ServerFiles f = server_files(state);
    return {f.ram_share, f.disk_share};
  }
  return {host.ram_dir, host.disk_dir};
}

std::vector<std::string> samba_dirs(const ServerFiles& f) {
  std::vector<std::string> dirs;
  for (const char* d : {"private", "lock", "state", "cache", "run", "ncalrpc"}) {
    dirs.push_back(f.samba_dir + "/" + d);
  }
  return dirs;
}

LabState plan(const LabOptions& opts, const std::string& dir, int instance) {
  CP_CHECK(!dir.empty() && dir.front() == '/');
  const InstanceNames n = instance_names(instance);
  LabState s;
  s.instance = instance;
  s.dir = dir;
  s.ssh_config = dir + "/ssh_config";
  s.identity = dir + "/id_ed25519";
  s.known_hosts = dir + "/known_hosts";
  s.server = make_host(dir, "server", n.server_netns, n.server_mgmt_address, n.server_data_address,
                       "cpd-s");
  s.client = make_host(dir, "client", n.client_netns, n.client_mgmt_address, n.client_data_address,
                       "cpd-c");
  s.sw.netns = n.switch_netns;
  s.options = opts;
  s.share_user = n.share_user;
  s.share_password_file = dir + "/share_password";
  const ServerFiles f = server_files(s);
  for (const char* protocol : {"ftp", "smb"}) {
    for (const char* medium : {"ram", "disk"}) {
      s.server.shares.push_back(LabShare{
          protocol, medium, fmt::format("{}://{}/{}", protocol, s.server.data_address, medium),
          std::string(medium) == "ram" ? f.ram_share : f.disk_share});
    }
  }
  ganesha::add_shares(s);
  return s;
}

void validate_samba_param(const std::string& line) {
  const size_t eq = line.find('=');
  std::string name = eq == std::string::npos ? line : line.substr(0, eq);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  const bool one_line = line.find_first_of("\n\r") == std::string::npos;
  const bool plain_name =
      !name.empty() && name.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789 :") == std::string::npos;
  if (eq == std::string::npos || !one_line || !plain_name) {
    throw Error(ErrorKind::kConfig, fmt::format("--samba '{}' is not one smb.conf parameter", line),
                "give 'name = value' on one line, like --samba 'smb2 max read = 16384'");
  }
}

void validate(const LabOptions& o) {
  for (auto [value, flag] : {std::pair{o.mtu, "--mtu"}, std::pair{o.server_mtu, "--server-mtu"},
                             std::pair{o.client_mtu, "--client-mtu"}}) {
    if (value == 0 && std::string(flag) != "--mtu") continue;  // unset: --mtu applies
    if (value < kMinMtu || value > kMaxMtu) {
      throw Error(ErrorKind::kConfig, fmt::format("{} {} is out of range", flag, value),
                  fmt::format("give an MTU from {} to {} bytes (1500 or 9000 are usual)", kMinMtu,
                              kMaxMtu));
    }
  }
  for (const std::string& p : o.samba_params) validate_samba_param(p);
  if (!o.server_profile.empty() && o.server_profile != "nas") {
    throw Error(ErrorKind::kConfig,
                fmt::format("--server-profile '{}' is not a profile of the lab", o.server_profile),
                "give nas (a BusyBox-only server root), or leave it out for a Debian server");
  }
  if (!o.server_login.empty() && o.server_login != "root" && o.server_login != "user") {
    throw Error(ErrorKind::kConfig,
                fmt::format("--server-login '{}' is not a login of the lab", o.server_login),
                "give user (the unprivileged share user) or root (the default)");
  }
  if (!(o.delay_s >= 0) || o.delay_s > 10) {
    throw Error(ErrorKind::kConfig, fmt::format("--delay {} s is out of range", o.delay_s),
                "give a one-way delay from 0 to 10s, like 2ms");
  }
  if (o.disk_bytes < kMinDiskBytes) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("--disk-size {} bytes is too small for ext4 with a journal", o.disk_bytes),
        "give at least 64MiB, like 3GiB");
  }
  if (o.ram_bytes < kMinRamBytes) {
    throw Error(ErrorKind::kConfig, fmt::format("--ram-size {} bytes is too small", o.ram_bytes),
                "give at least 1MiB, like 2GiB");
  }
}

void validate_dir(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') {
    throw Error(ErrorKind::kConfig, fmt::format("lab dir '{}' is not an absolute path", dir),
                fmt::format("set {} to an absolute path, like {}", kDirEnv, kDefaultDir));
  }
  // sshd_config and ssh_config split words at spaces and expand % and ~, and
  // the paths go into both; keep to characters that mean nothing there.
  const auto bad = dir.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@");
  if (bad != std::string::npos) {
    throw Error(ErrorKind::kConfig,
                fmt::format("lab dir '{}' has a character ('{}') that sshd/ssh config files would "
                            "split or expand",
                            dir, dir[bad]),
                fmt::format("set {} to a path of letters, digits and / . _ - + , : @", kDirEnv));
  }
  if (dir == "/" || dir.find("/../") != std::string::npos || dir.ends_with("/..")) {
    throw Error(ErrorKind::kConfig, fmt::format("lab dir '{}' is not a usable directory", dir),
                fmt::format("set {} to a dedicated directory, like {}", kDirEnv, kDefaultDir));
  }
  for (const char* hidden : {"/run", "/var/run", "/dev/shm", "/proc", "/sys"}) {
    if (starts_with_dir(dir, hidden)) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("lab dir '{}' is under {}, which each lab host replaces with its own",
                              dir, hidden),
                  fmt::format("set {} to a path outside it, like {}", kDirEnv, kDefaultDir));
    }
  }
}

uint64_t tbf_burst_bytes(uint64_t rate_bits, int mtu) {
  CP_CHECK(rate_bits > 0 && mtu > 0);
  // 1 ms worth of tokens, rounded up.
  const uint64_t per_ms = (rate_bits + 7999) / 8000;
  // A frame is the MTU plus the 14-byte Ethernet header tbf also counts.
  const uint64_t frames = 4 * (static_cast<uint64_t>(mtu) + 14);
  return std::max(per_ms, frames);
}

uint64_t netem_limit_packets(uint64_t rate_bits, double delay_s, int mtu) {
  const double rate = rate_bits > 0 ? static_cast<double>(rate_bits) : 10e9;
  const double packets = rate / 8 * delay_s / std::max(mtu, kMinMtu);
  return std::max<uint64_t>(1000, static_cast<uint64_t>(std::ceil(2 * packets)));
}

std::vector<Command> link_shaping_commands(const std::string& ns, const std::string& dev, int mtu,
                                           uint64_t rate_bits, double delay_s) {
  std::vector<Command> cmds;
  cmds.push_back({{"ip", "-n", ns, "link", "set", "dev", dev, "mtu", std::to_string(mtu)}});
  auto tbf = [&](std::vector<std::string> where) {
    std::vector<std::string> argv = {"tc", "-n", ns, "qdisc", "replace", "dev", dev};
    argv.insert(argv.end(), where.begin(), where.end());
    for (std::string a : {std::string("tbf"), std::string("rate"), fmt::format("{}bit", rate_bits),
                          std::string("burst"), std::to_string(tbf_burst_bytes(rate_bits, mtu)),
                          std::string("latency"), std::string(kTbfLatency)}) {
      argv.push_back(a);
    }
    return argv;
  };
  if (delay_s > 0) {
    // netem cannot be "replaced" under a different parent layout; start clean.
    cmds.push_back({{"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"}, true});
    const auto us = static_cast<uint64_t>(std::llround(delay_s * 1e6));
    cmds.push_back({{"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
                     "delay", fmt::format("{}us", us), "limit",
                     std::to_string(netem_limit_packets(rate_bits, delay_s, mtu))}});
    if (rate_bits > 0) cmds.push_back({tbf({"parent", "1:1", "handle", "10:"})});
  } else if (rate_bits > 0) {
    cmds.push_back({tbf({"root"})});
  } else {
    // Unshaped: back to the veth default (noqueue); fails harmlessly when already there.
    cmds.push_back({{"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"}, true});
  }
  return cmds;
}

std::vector<Command> shaping_commands(const LabHost& host, const LabOptions& o, bool with_delay) {
  return link_shaping_commands(host.netns, host.data_ifname, host_mtu(o, host.role), o.rate_bits,
                               with_delay ? o.delay_s : 0);
}

std::vector<Command> switch_create_commands(const LabState& s) {
  const std::string& sw = s.sw.netns;
  CP_CHECK(!sw.empty());
  return {
      // Best effort: a kernel without IPv6 has nothing to switch off.
      {{"ip", "netns", "exec", sw, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1"},
       true},
      {{"ip", "-n", sw, "link", "set", "dev", "lo", "up"}},
      {{"ip", "-n", s.server.netns, "link", "add", s.server.data_ifname, "type", "veth", "peer",
        "name", kSwitchServerPort, "netns", sw}},
      {{"ip", "-n", s.client.netns, "link", "add", s.client.data_ifname, "type", "veth", "peer",
        "name", kSwitchClientPort, "netns", sw}},
      {{"ip", "-n", sw, "link", "add", kSwitchBridge, "type", "bridge"}},
      {{"ip", "-n", sw, "link", "set", "dev", kSwitchBridge, "up"}},
  };
}

std::vector<Command> switch_port_commands(const LabState& s, const LabOptions& o, bool bridged,
                                          bool netem) {
  const std::string& sw = s.sw.netns;
  CP_CHECK(!sw.empty());
  std::vector<Command> cmds;
  for (const char* port : {kSwitchServerPort, kSwitchClientPort}) {
    for (Command& c :
         link_shaping_commands(sw, port, switch_mtu(o), o.path_rate_bits, netem ? o.delay_s : 0)) {
      cmds.push_back(std::move(c));
    }
    if (bridged) {
      cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "master", kSwitchBridge}});
    } else {
      cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "nomaster"}});
    }
    cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "up"}});
  }
  return cmds;
}

std::vector<std::string> netem_probe_command() {
  // A fresh, unnamed network namespace that vanishes when tc exits.
  return {"unshare", "--net", "--",   "tc",    "qdisc", "add",
          "dev",     "lo",    "root", "netem", "delay", "1ms"};
}

bool says_qdisc_unknown(std::string_view err) {
  return err.find("Specified qdisc kind is unknown") != std::string_view::npos ||
         err.find("Unknown qdisc") != std::string_view::npos;
}

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
    if (point != dir && !starts_with_dir(point, dir)) continue;
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

std::string sshd_config_text(const LabState& s, const LabHost& h) {
  const HostFiles f = host_files(s, h);
  return fmt::format(
      "# {host}: sshd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` removes "
      "it)\n"
      "ListenAddress {addr}\n"
      "Port 22\n"
      "HostKey {key}\n"
      "PidFile {pid}\n"
      // The lab's key (root); a user's own ~/.ssh/authorized_keys too, read as
      // that user (the tune tests log in as a non-root user).
      "AuthorizedKeysFile {auth} .ssh/authorized_keys\n"
      "PermitRootLogin prohibit-password\n"
      "PubkeyAuthentication yes\n"
      "PasswordAuthentication no\n"
      "KbdInteractiveAuthentication no\n"
      "UsePAM no\n"
      "StrictModes no\n"
      "UseDNS no\n"
      "PrintMotd no\n"
      "PrintLastLog no\n"
      "X11Forwarding no\n"
      // diagnose opens several channels and connections at once.
      "MaxSessions 32\n"
      "MaxStartups 32:30:64\n"
      "Subsystem sftp internal-sftp\n"
      "{chroot}",
      fmt::arg("host", h.hostname), fmt::arg("addr", h.mgmt_address), fmt::arg("key", f.host_key),
      fmt::arg("pid", f.pid_file), fmt::arg("auth", s.dir + "/authorized_keys"),
      // The nas profile: every session in the BusyBox-only root (nas_root.h).
      fmt::arg("chroot", h.role == "server" && s.options.server_profile == "nas"
                             ? "ChrootDirectory " + f.dir + "/nasroot\n"
                             : std::string()));
}

std::string vsftpd_conf_text(const LabState& s) {
  const ServerFiles f = server_files(s);
  return fmt::format(
      "# {host}: vsftpd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` "
      "removes it)\n"
      "listen=YES\n"
      "listen_ipv6=NO\n"
      "listen_address={addr}\n"
      "listen_port={port}\n"
      "background=NO\n"
      "anonymous_enable=NO\n"
      "local_enable=YES\n"
      "write_enable=YES\n"
      "local_umask=022\n"
      "chroot_local_user=NO\n"
      "local_root={root}\n"
      "userlist_enable=NO\n"
      "pam_service_name=vsftpd\n"
      // Its default lives under /run, which each lab host replaces.
      "secure_chroot_dir={empty}\n"
      // vsftpd's seccomp filter refuses a syscall the lab's kernel makes. Its
      // defaults isolate=YES and isolate_network=YES stay (each session in
      // namespaces of its own, as on a stock Debian server): the verdict
      // must know such a session for the file server it is.
      "seccomp_sandbox=NO\n"
      "pasv_enable=YES\n"
      "pasv_min_port={pmin}\n"
      "pasv_max_port={pmax}\n"
      "connect_from_port_20=NO\n"
      // Explicit TLS offered, not required: ftp:// and ftps:// on the same port.
      "ssl_enable=YES\n"
      "rsa_cert_file={cert}\n"
      "rsa_private_key_file={key}\n"
      "allow_anon_ssl=NO\n"
      "force_local_logins_ssl=NO\n"
      "force_local_data_ssl=NO\n"
      // vsftpd 3.0.3's default (DES-CBC3-SHA) is refused by OpenSSL 3.
      "ssl_ciphers=HIGH\n"
      // libcurl resumes the control connection's TLS session on data connections, but
      // not always in the way vsftpd's check expects under TLS 1.3 ("522 ... session
      // reuse required"); the lab does not need that check.
      "require_ssl_reuse=NO\n"
      "xferlog_enable=YES\n"
      "vsftpd_log_file={log}\n"
      "syslog_enable=NO\n"
      "max_clients=0\n"
      "max_per_ip=0\n"
      "ftpd_banner=chokepoint lab FTP on {host}\n",
      fmt::arg("host", s.server.hostname), fmt::arg("addr", s.server.data_address),
      fmt::arg("port", kFtpPort), fmt::arg("root", f.ftp_root), fmt::arg("empty", f.ftp_empty),
      fmt::arg("pmin", kPasvMinPort), fmt::arg("pmax", kPasvMaxPort), fmt::arg("log", f.vsftpd_log),
      fmt::arg("cert", f.ftps_cert), fmt::arg("key", f.ftps_key));
}

const char* const kVsftpdPam =
    "# chokepoint lab: vsftpd's PAM service inside cp-server only\n"
    "auth required pam_unix.so\n"
    "account required pam_unix.so\n"
    "session required pam_permit.so\n";

std::string smb_conf_text(const LabState& s) {
  const ServerFiles f = server_files(s);
  const std::vector<std::string> d = samba_dirs(f);
  std::string out = fmt::format(
      "# {host}: smbd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` removes "
      "it)\n"
      "[global]\n"
      "  server role = standalone server\n"
      "  workgroup = CHOKEPOINT\n"
      "  netbios name = CP-SERVER\n"
      "  interfaces = {addr}\n"
      "  bind interfaces only = yes\n"
      "  smb ports = {port}\n"
      "  disable netbios = yes\n"
      "  server min protocol = SMB2_02\n"
      "  private dir = {private}\n"
      "  lock directory = {lock}\n"
      "  state directory = {state}\n"
      "  cache directory = {cache}\n"
      "  pid directory = {run}\n"
      "  ncalrpc dir = {ncalrpc}\n"
      "  passdb backend = tdbsam:{private}/passdb.tdb\n"
      "  log file = {samba}/log.%m\n"
      "  max log size = 1000\n"
      "  log level = 1\n"
      "  map to guest = never\n"
      "  load printers = no\n"
      "  printing = bsd\n"
      "  printcap name = /dev/null\n"
      "  disable spoolss = yes\n"
      "  usershare path =\n"
      "  obey pam restrictions = no\n",
      fmt::arg("host", s.server.hostname), fmt::arg("addr", s.server.data_address),
      fmt::arg("port", kSmbPort), fmt::arg("private", d[0]), fmt::arg("lock", d[1]),
      fmt::arg("state", d[2]), fmt::arg("cache", d[3]), fmt::arg("run", d[4]),
      fmt::arg("ncalrpc", d[5]), fmt::arg("samba", f.samba_dir));
  auto share = [&](const std::string& name, const std::string& path, bool read_only) {
    out += fmt::format(
        "\n[{}]\n"
        "  path = {}\n"
        "  read only = {}\n"
        "  valid users = {}\n",
        name, path, read_only ? "yes" : "no", s.share_user);
  };
  if (!s.options.samba_params.empty()) {
    out += "  # lab up --samba\n";
    for (const std::string& p : s.options.samba_params) out += "  " + p + "\n";
  }
  share("ram", f.ram_share, false);
  share("disk", f.disk_share, false);
  share(kReadOnlyShare, f.ro_share, true);
  return out;
}

// $0 is a name for ps; $1 share user, $2 ram share, $3 disk share, $4 ro
// share, $5 PAM file, $6 vsftpd.conf, $7 vsftpd output, $8 vsftpd pid file,
// $9 smb.conf, $10 smbd output, $11 smbd pid file, $12 which to start
// ("ftp smb", "ftp" or "smb"). Runs inside the server host's namespaces.
const char* const kServerStartScript =
    "set -e\n"
    "install -d -o \"$1\" -g \"$1\" -m 0755 \"$2\" \"$3\"\n"
    "install -d -o root -g root -m 0755 \"$4\"\n"
    // Only in this host's mount namespace; once.
    "grep -q ' /etc/pam.d/vsftpd ' /proc/self/mountinfo || mount --bind \"$5\" "
    "/etc/pam.d/vsftpd\n"
    "for what in ${12}; do\n"
    "  case \"$what\" in\n"
    "  ftp) setsid -f sh -c 'exec </dev/null >>\"$1\" 2>&1; echo $$ >\"$2\"; exec vsftpd "
    "\"$3\"' cp-lab-ftp \"$7\" \"$8\" \"$6\" ;;\n"
    "  smb) setsid -f sh -c 'exec </dev/null >>\"$1\" 2>&1; echo $$ >\"$2\"; exec smbd "
    "--foreground --no-process-group -s \"$3\"' cp-lab-smb \"${10}\" \"${11}\" \"$9\" "
    ";;\n"
    "  esac\n"
    "done\n";

std::vector<std::string> server_start_argv(const LabState& state, const std::string& which) {
  const ServerFiles f = server_files(state);
  CP_CHECK(state.server.sshd_pid > 0);
  return {"nsenter",
          "-t",
          std::to_string(state.server.sshd_pid),
          "-m",
          "-u",
          "-n",
          "--",
          "sh",
          "-c",
          kServerStartScript,
          "cp-lab-servers",
          state.share_user,
          f.ram_share,
          f.disk_share,
          f.ro_share,
          f.pam_file,
          f.vsftpd_conf,
          f.vsftpd_out,
          f.vsftpd_pid,
          f.smb_conf,
          f.smbd_out,
          f.smbd_pid,
          which};
}

std::string ssh_config_text(const LabState& s) {
  std::string out = fmt::format("# chokepoint lab: ssh -F {} {} (or {})\n", s.ssh_config,
                                s.server.alias, s.client.alias);
  for (const LabHost* h : {&s.server, &s.client}) {
    out += fmt::format(
        "\nHost {}\n"
        "  HostName {}\n"
        "  User {}\n"
        "  IdentityFile {}\n"
        "  IdentitiesOnly yes\n"
        "  UserKnownHostsFile {}\n"
        "  StrictHostKeyChecking yes\n",
        h->alias, h->mgmt_address,
        h == &s.server && server_login_is_user(s) ? s.share_user : std::string("root"), s.identity,
        s.known_hosts);
  }
  return out;
}

std::string known_hosts_text(const LabState& s, std::string_view server_pub,
                             std::string_view client_pub) {
  // "ssh-ed25519 AAAA... comment\n" -> "ssh-ed25519 AAAA..."
  auto key_of = [](std::string_view pub) {
    std::string_view k = pub;
    while (!k.empty() && (k.front() == ' ' || k.front() == '\n')) k.remove_prefix(1);
    const size_t type_end = k.find(' ');
    if (type_end == std::string_view::npos) {
      throw Error(ErrorKind::kIo, fmt::format("'{}' is not an SSH public key", pub),
                  "run `chokepoint lab down` and `lab up` again to regenerate the lab's keys");
    }
    const size_t key_end = k.find_first_of(" \n", type_end + 1);
    return std::string(k.substr(0, key_end));
  };
  return fmt::format("{} {}\n{} {}\n", s.server.mgmt_address, key_of(server_pub),
                     s.client.mgmt_address, key_of(client_pub));
}

// --- lab.json ---------------------------------------------------------------

json::object throttle_to_json(const LabThrottle& t) {
  json::array cgroups;
  for (const std::string& c : t.cgroups) cgroups.emplace_back(c);
  return {{"smbd_cpu", t.smbd_cpu},
          {"nfsd_cpu", t.nfsd_cpu},
          {"disk_read_bps", t.disk_read_bps},
          {"disk_write_bps", t.disk_write_bps},
          {"client_cpu", t.client_cpu},
          {"client_disk_read_bps", t.client_disk_read_bps},
          {"client_disk_write_bps", t.client_disk_write_bps},
          {"cgroups", std::move(cgroups)}};
}

namespace {

constexpr int kStateVersion = 1;

json::object host_to_json(const LabHost& h) {
  json::array shares;
  for (const LabShare& sh : h.shares) {
    shares.push_back(json::object{{"protocol", sh.protocol},
                                  {"medium", sh.medium},
                                  {"url", sh.url},
                                  {"server_dir", sh.server_dir}});
  }
  return {{"role", h.role},
          {"netns", h.netns},
          {"alias", h.alias},
          {"hostname", h.hostname},
          {"mgmt_address", h.mgmt_address},
          {"data_address", h.data_address},
          {"data_ifname", h.data_ifname},
          {"ram_dir", h.ram_dir},
          {"disk_dir", h.disk_dir},
          {"loop_device", h.loop_device},
          {"sshd_pid", h.sshd_pid},
          {"shares", std::move(shares)},
          {"ftpd_pid", h.ftpd_pid},
          {"smbd_pid", h.smbd_pid},
          {"nfsd_pid", h.nfsd_pid},
          {"rpcbind_pid", h.rpcbind_pid}};
}

json::object options_to_json(const LabOptions& o) {
  json::array samba;
  for (const std::string& p : o.samba_params) samba.emplace_back(p);
  return {{"rate_bits", o.rate_bits},           {"mtu", o.mtu},
          {"server_mtu", o.server_mtu},         {"client_mtu", o.client_mtu},
          {"path_rate_bits", o.path_rate_bits}, {"delay_s", o.delay_s},
          {"disk_bytes", o.disk_bytes},         {"ram_bytes", o.ram_bytes},
          {"samba_params", std::move(samba)},   {"server_profile", o.server_profile},
          {"server_login", o.server_login}};
}

// Typed reads that name the file and the field on failure.
class Reader {
 public:
  Reader(const json::object& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(std::string_view name) const { return obj_.contains(name); }
  const json::value& at(std::string_view name) const {
    const json::value* v = obj_.if_contains(name);
    if (!v) fail(name, "is missing");
    return *v;
  }
  std::string str(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_string()) fail(name, "must be a string");
    return std::string(v.get_string());
  }
  uint64_t u64(std::string_view name) const {
    const json::value& v = at(name);
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
    fail(name, "must be a whole number >= 0");
  }
  int64_t i64(std::string_view name) const {
    const json::value& v = at(name);
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64() && v.get_uint64() <= INT64_MAX) return static_cast<int64_t>(v.get_uint64());
    fail(name, "must be a whole number");
  }
  double num(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_number()) fail(name, "must be a number");
    return v.to_number<double>();
  }
  bool boolean(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_bool()) fail(name, "must be true or false");
    return v.get_bool();
  }
  std::vector<Reader> objects(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_array()) fail(name, "must be an array");
    std::vector<Reader> out;
    for (const json::value& e : v.get_array()) {
      if (!e.is_object()) fail(name, "must hold objects");
      out.emplace_back(e.get_object(), where_ + "." + std::string(name) + "[]");
    }
    return out;
  }
  std::vector<std::string> strings(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_array()) fail(name, "must be an array");
    std::vector<std::string> out;
    for (const json::value& e : v.get_array()) {
      if (!e.is_string()) fail(name, "must hold strings");
      out.emplace_back(e.get_string());
    }
    return out;
  }
  Reader object(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_object()) fail(name, "must be an object");
    return Reader(v.get_object(), where_ + "." + std::string(name));
  }

  [[noreturn]] void fail(std::string_view name, std::string_view what) const {
    throw Error(ErrorKind::kConfig, fmt::format("lab state {}: '{}' {}", where_, name, what),
                "the lab dir was edited or is from another version: run `chokepoint lab down`");
  }

 private:
  const json::object& obj_;
  std::string where_;
};

LabHost host_from_json(const Reader& r) {
  LabHost h;
  h.role = r.str("role");
  h.netns = r.str("netns");
  h.alias = r.str("alias");
  h.hostname = r.str("hostname");
  h.mgmt_address = r.str("mgmt_address");
  h.data_address = r.str("data_address");
  h.data_ifname = r.str("data_ifname");
  h.ram_dir = r.str("ram_dir");
  h.disk_dir = r.str("disk_dir");
  h.loop_device = r.str("loop_device");
  const int64_t pid = r.i64("sshd_pid");
  if (pid < 0 || pid > INT32_MAX) r.fail("sshd_pid", "is not a process id");
  h.sshd_pid = static_cast<int>(pid);
  // Absent in a lab.json from before the lab served FTP and SMB.
  if (r.has("shares")) {
    for (const Reader& sr : r.objects("shares")) {
      h.shares.push_back(
          LabShare{sr.str("protocol"), sr.str("medium"), sr.str("url"), sr.str("server_dir")});
    }
  }
  for (auto [name, field] :
       {std::pair{"ftpd_pid", &h.ftpd_pid}, std::pair{"smbd_pid", &h.smbd_pid},
        std::pair{"nfsd_pid", &h.nfsd_pid}, std::pair{"rpcbind_pid", &h.rpcbind_pid}}) {
    if (!r.has(name)) continue;
    const int64_t p = r.i64(name);
    if (p < 0 || p > INT32_MAX) r.fail(name, "is not a process id");
    *field = static_cast<int>(p);
  }
  return h;
}

}  // namespace

std::string state_to_json(const LabState& s) {
  json::object o = {
      {"version", kStateVersion},
      {"instance", s.instance},
      {"dir", s.dir},
      {"ssh_config", s.ssh_config},
      {"identity", s.identity},
      {"known_hosts", s.known_hosts},
      {"options", options_to_json(s.options)},
      {"server", host_to_json(s.server)},
      {"client", host_to_json(s.client)},
      {"switch",
       {{"netns", s.sw.netns},
        {"delay_mode", s.sw.delay_mode},
        {"delay_line_pid", s.sw.delay_line_pid}}},
      {"share_user", s.share_user},
      {"share_password_file", s.share_password_file},
      {"share_user_created", s.share_user_created},
  };
  o["throttle"] = throttle_to_json(s.throttle);
  return json::serialize(o) + "\n";
}

LabState state_from_json(std::string_view text, const std::string& where) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    throw Error(ErrorKind::kConfig,
                fmt::format("lab state {} is not a JSON object{}", where,
                            ec ? ": " + ec.message() : std::string()),
                "the lab dir was edited or is damaged: run `chokepoint lab down`");
  }
  const Reader r(v.get_object(), where);
  if (r.i64("version") != kStateVersion) r.fail("version", "is not one this chokepoint reads");
  LabState s;
  // Absent in a lab.json from before instances: the one lab was instance 0.
  if (r.has("instance")) {
    const int64_t n = r.i64("instance");
    if (n < 0 || n > kMaxInstance) r.fail("instance", "is out of range");
    s.instance = static_cast<int>(n);
  }
  s.dir = r.str("dir");
  s.ssh_config = r.str("ssh_config");
  s.identity = r.str("identity");
  s.known_hosts = r.str("known_hosts");
  const Reader o = r.object("options");
  s.options.rate_bits = o.u64("rate_bits");
  auto mtu_of = [&](std::string_view name, bool zero_ok) {
    const int64_t mtu = o.i64(name);
    if ((mtu != 0 || !zero_ok) && (mtu < kMinMtu || mtu > kMaxMtu)) o.fail(name, "is out of range");
    return static_cast<int>(mtu);
  };
  s.options.mtu = mtu_of("mtu", false);
  s.options.delay_s = o.num("delay_s");
  s.options.disk_bytes = o.u64("disk_bytes");
  s.options.ram_bytes = o.u64("ram_bytes");
  // Absent in a lab.json from before the switch.
  if (o.has("server_mtu")) s.options.server_mtu = mtu_of("server_mtu", true);
  if (o.has("client_mtu")) s.options.client_mtu = mtu_of("client_mtu", true);
  if (o.has("path_rate_bits")) s.options.path_rate_bits = o.u64("path_rate_bits");
  if (o.has("samba_params")) s.options.samba_params = o.strings("samba_params");
  if (o.has("server_profile")) s.options.server_profile = o.str("server_profile");
  if (o.has("server_login")) s.options.server_login = o.str("server_login");
  if (r.has("switch")) {
    const Reader w = r.object("switch");
    s.sw.netns = w.str("netns");
    s.sw.delay_mode = w.str("delay_mode");
    const int64_t pid = w.i64("delay_line_pid");
    if (pid < 0 || pid > INT32_MAX) w.fail("delay_line_pid", "is not a process id");
    s.sw.delay_line_pid = static_cast<int>(pid);
  }
  s.server = host_from_json(r.object("server"));
  s.client = host_from_json(r.object("client"));
  if (s.server.role != "server") r.fail("server.role", "must be \"server\"");
  if (s.client.role != "client") r.fail("client.role", "must be \"client\"");
  if (r.has("share_user")) {
    s.share_user = r.str("share_user");
    s.share_password_file = r.str("share_password_file");
    s.share_user_created = r.boolean("share_user_created");
  }
  if (r.has("throttle")) {
    const Reader t = r.object("throttle");
    s.throttle.smbd_cpu = t.num("smbd_cpu");
    if (t.has("nfsd_cpu")) s.throttle.nfsd_cpu = t.num("nfsd_cpu");
    s.throttle.disk_read_bps = t.u64("disk_read_bps");
    s.throttle.disk_write_bps = t.u64("disk_write_bps");
    // Absent in a lab.json from before the client throttles.
    if (t.has("client_cpu")) s.throttle.client_cpu = t.num("client_cpu");
    if (t.has("client_disk_read_bps")) {
      s.throttle.client_disk_read_bps = t.u64("client_disk_read_bps");
    }
    if (t.has("client_disk_write_bps")) {
      s.throttle.client_disk_write_bps = t.u64("client_disk_write_bps");
    }
    s.throttle.cgroups = t.strings("cgroups");
  }
  return s;
}

}  // namespace cp::lab
