#include "lab/layout.h"

#include "lab/ganesha.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"

namespace cp::lab {

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
  for (const char* protocol : {"ftp", "smb"}) add_server_shares(s, protocol);
  ganesha::add_shares(s);
  return s;
}

void add_server_shares(LabState& s, const std::string& protocol) {
  const ServerFiles f = server_files(s);
  for (const char* medium : {"ram", "disk"}) {
    s.server.shares.push_back(LabShare{
        protocol, medium, fmt::format("{}://{}/{}", protocol, s.server.data_address, medium),
        std::string(medium) == "ram" ? f.ram_share : f.disk_share});
  }
}

std::pair<std::string, std::string> samba_param_section(const std::string& line) {
  if (line.empty() || line.front() != '[') return {"", line};
  const size_t close = line.find(']');
  if (close == std::string::npos) return {"", line};
  std::string rest = line.substr(close + 1);
  while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
  return {line.substr(1, close - 1), rest};
}

void validate_samba_param(const std::string& line) {
  const auto [section, param] = samba_param_section(line);
  const size_t eq = param.find('=');
  std::string name = eq == std::string::npos ? param : param.substr(0, eq);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  const bool one_line = line.find_first_of("\n\r") == std::string::npos;
  const bool plain_name =
      !name.empty() && name.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789 :") == std::string::npos;
  // A share's own section: one the lab exports.
  const bool known_section =
      line.front() != '[' || section == "ram" || section == "disk" || section == kReadOnlyShare;
  if (eq == std::string::npos || !one_line || !plain_name || !known_section) {
    throw Error(ErrorKind::kConfig, fmt::format("--samba '{}' is not one smb.conf parameter", line),
                fmt::format("give 'name = value' on one line, like --samba 'smb2 max read = "
                            "16384', or '[share] name = value' for one share's section (ram, "
                            "disk or {})",
                            kReadOnlyShare));
  }
}

namespace {

// Whether `name` is made of `chars` alone (and not empty).
bool only(const std::string& name, std::string_view chars) {
  return !name.empty() && name.find_first_not_of(chars) == std::string::npos;
}
constexpr std::string_view kNameChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";

}  // namespace

void validate_vsftpd_param(const std::string& line) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos ||
      !only(line.substr(0, eq), "abcdefghijklmnopqrstuvwxyz0123456789_") ||
      line.find_first_of("\n\r") != std::string::npos) {
    throw Error(ErrorKind::kConfig,
                fmt::format("--vsftpd '{}' is not one vsftpd.conf setting", line),
                "give 'name=value' on one line without spaces around '=', like --vsftpd "
                "'local_max_rate=20000000'");
  }
}

void validate_ganesha_param(const std::string& line) {
  const size_t eq = line.find('=');
  std::string name = eq == std::string::npos ? line : line.substr(0, eq);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  if (eq == std::string::npos || !only(name, kNameChars) ||
      line.find_first_of(";{}#\n\r") != std::string::npos) {
    throw Error(ErrorKind::kConfig,
                fmt::format("--ganesha '{}' is not one ganesha.conf EXPORT parameter", line),
                "give 'Name = value' on one line without ';', braces or '#', like --ganesha "
                "'MaxWrite = 65536'");
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
  for (const std::string& p : o.vsftpd_params) validate_vsftpd_param(p);
  for (const std::string& p : o.ganesha_params) validate_ganesha_param(p);
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

}  // namespace cp::lab
