#include "probe/sysinfo.h"

#include "probe/server_configs.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/ini.h"
#include "core/mountinfo.h"
#include "core/process.h"
#include "core/text.h"
#include "core/units.h"
#include "probe/disk.h"
#include "probe/platform.h"

namespace cp::probe {

namespace json = boost::json;

namespace {

std::optional<std::string> unless_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// A positive byte rate from tc JSON (a number, or an object holding "rate"), bytes/s.
std::optional<uint64_t> json_rate(const json::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_object()) return json_rate(v->as_object().if_contains("rate"));
  double d = 0;
  if (v->is_uint64()) {
    d = static_cast<double>(v->as_uint64());
  } else if (v->is_int64()) {
    d = static_cast<double>(v->as_int64());
  } else if (v->is_double()) {
    d = v->as_double();
  } else {
    return std::nullopt;  // e.g. cake's "unlimited"
  }
  if (!(d > 0) || d > 1.8e18) return std::nullopt;
  return static_cast<uint64_t>(d);
}

// Shaping configured on interface `name`, bit/s; nullopt when none.
std::optional<uint64_t> shaped_rate(const std::string& name) {
  // Without iproute2's tc (BusyBox's has no -j and prints no rates), from the kernel.
  auto from_kernel = [&] { return os::shaped_rate_bits(name); };
  const std::string tc = find_program("tc");
  if (tc.empty()) return from_kernel();
  std::optional<uint64_t> rate;
  try {
    RunResult q = run_command({tc, "-j", "qdisc", "show", "dev", name}, "", 10);
    if (q.exit_code != 0) return from_kernel();
    rate = parse_tc_qdisc_rate(q.out);
    if (q.out.find("\"htb\"") != std::string::npos) {
      RunResult c = run_command({tc, "class", "show", "dev", name}, "", 10);
      if (c.exit_code == 0) {
        if (auto htb = parse_tc_htb_root_rate(c.out)) rate = rate ? std::min(*rate, *htb) : *htb;
      }
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  return rate;
}

bool same_address(const sockaddr* a, const sockaddr_storage& b) {
  if (a == nullptr || a->sa_family != b.ss_family) return false;
  if (a->sa_family == AF_INET) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr,
                       &reinterpret_cast<const sockaddr_in*>(&b)->sin_addr, sizeof(in_addr)) == 0;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr,
                       sizeof(in6_addr)) == 0;
  }
  return false;
}

std::string address_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

// The interface the kernel would use to reach `peer`: a connected UDP socket sends
// nothing but gets the source address the route picks.
msg::NetFacts net_facts(const std::string& peer) {
  msg::NetFacts o;
  o.peer = peer;
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(peer.c_str(), "9", &hints, &res); rc != 0) {
    o.error = fmt::format("cannot resolve '{}': {}", peer, gai_strerror(rc));
    return o;
  }
  int fd = -1;
  sockaddr_storage local{};
  int err = 0;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    socklen_t len = sizeof local;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      break;
    }
    err = errno;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    o.error = fmt::format("no route to '{}': {}", peer, errno_text(err));
    return o;
  }
  o.address = address_text(local);
  std::string name;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (same_address(i->ifa_addr, local)) {
        name = i->ifa_name;
        break;
      }
    }
    ::freeifaddrs(ifs);
  }
  if (!name.empty() && name.size() < IFNAMSIZ) {
    o.name = name;
    ifreq req{};
    std::memcpy(req.ifr_name, name.c_str(), name.size() + 1);
    if (::ioctl(fd, SIOCGIFMTU, &req) == 0) o.mtu = req.ifr_mtu;
    // -1 (or EINVAL) when the driver does not know, as for lo and many virtual NICs.
    if (const int64_t speed = os::link_speed_mbit(name); speed > 0) o.speed_mbit = speed;
    o.shaped_rate_bit = shaped_rate(name);
  }
  ::close(fd);
  return o;
}

std::string read_os() {
  std::string text;
  if (read_file("/etc/os-release", &text) || read_file("/usr/lib/os-release", &text)) {
    return parse_os_release(text);
  }
  return {};
}

std::optional<msg::DirFacts> dir_facts(const char* role, const std::string& path,
                                       bool with_device) {
  if (path.empty()) return std::nullopt;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      throw Error(ErrorKind::kConfig, fmt::format("{} '{}' does not exist", role, path),
                  fmt::format("create it on that host, or set {} to an existing directory", role));
    }
    throw Error(ErrorKind::kConfig,
                fmt::format("{} '{}' cannot be accessed: {}", role, path, errno_text(err)),
                "check the permissions of the directory and its parents");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(ErrorKind::kConfig, fmt::format("{} '{}' is not a directory", role, path),
                fmt::format("set {} to a directory", role));
  }
  msg::DirFacts o;
  o.path = path;
  MountEntry mount;
  try {
    o.fs_type = fs_type(path);
    mount = mount_of(path);
  } catch (const Error&) {
  }
  try {
    FsSpace space = fs_space(path);
    o.total_bytes = space.total;
    o.avail_bytes = space.avail;
  } catch (const Error&) {
  }
  o.with_device = with_device;
  if (with_device) {
    o.mount_source = unless_empty(mount.source);
    o.device = dir_device_facts(path);
    // ZFS keeps its own cache (the ARC): its ceiling decides which files a read
    // may find there (os::read_cache_verdict). The dataset is mount_source.
    if (o.fs_type) o.zfs = zfs_facts(*o.fs_type, "/proc");
  }
  return o;
}

}  // namespace

msg::NamedValues tcp_sysctl_facts(const std::string& proc_root) {
  msg::NamedValues o;
  for (const char* key : {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max",
                          "net.core.wmem_max", "net.ipv4.tcp_congestion_control",
                          "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_mtu_probing"}) {
    const std::optional<std::string> value = os::sysctl(proc_root, key);
    o.push_back({key, value ? unless_empty(squeeze_ws(*value)) : std::nullopt});
  }
  return o;
}

msg::NamedValues parse_samba_globals(std::string_view text) {
  msg::NamedValues o;
  bool in_global = false;
  for (const IniLine& l : read_ini(text, {.comment_chars = "#;", .continuation = true})) {
    if (l.text.front() == '[') {  // a header smbd cannot read leaves [global] too
      in_global = l.kind == IniLine::Kind::kSection && lower(l.section) == "global";
      continue;
    }
    if (!in_global || l.kind != IniLine::Kind::kEntry) continue;
    const std::string name = lower(squeeze_ws(l.key));
    if (name.empty()) continue;
    auto same = [&](const msg::NamedValue& v) { return v.name == name; };
    if (auto it = std::find_if(o.begin(), o.end(), same); it != o.end()) {
      it->value = l.value;
    } else {
      o.push_back({name, l.value});
    }
  }
  return o;
}

std::map<std::string, msg::NamedValues> parse_samba_shares(std::string_view text) {
  std::map<std::string, msg::NamedValues> out;
  const std::vector<std::string>& asked = samba_parameters_asked();
  msg::NamedValues* share = nullptr;
  for (const IniLine& l : read_ini(text, {.comment_chars = "#;", .continuation = true})) {
    if (l.text.front() == '[') {
      const std::string name = lower(squeeze_ws(l.section));
      share = l.kind != IniLine::Kind::kSection || name.empty() || name == "global" ||
                      name == "printers"
                  ? nullptr
                  : &out[name];
      continue;
    }
    if (share == nullptr || l.kind != IniLine::Kind::kEntry) continue;
    const std::string name = lower(squeeze_ws(l.key));
    if (name != "path" && std::find(asked.begin(), asked.end(), name) == asked.end()) continue;
    auto same = [&](const msg::NamedValue& v) { return v.name == name; };
    if (auto it = std::find_if(share->begin(), share->end(), same); it != share->end()) {
      it->value = l.value;
    } else {
      share->push_back({name, l.value});
    }
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CP_CHECK(EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr) == 1);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string smbd_config_from_cmdline(std::string_view cmdline) {
  const std::vector<std::string_view> args = cmdline_args(cmdline);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i];
    const bool has_next = i + 1 < args.size();
    if ((a == "-s" || a == "--configfile") && has_next) return std::string(args[i + 1]);
    if (a.rfind("--configfile=", 0) == 0) return std::string(a.substr(13));
    if (a.size() > 2 && a.rfind("-s", 0) == 0 && a[2] != '-') return std::string(a.substr(2));
  }
  return {};
}

std::vector<std::string> installed_smbd_paths() {
  std::vector<std::string> out;
  for (std::string p :
       {find_program("smbd"), std::string("/usr/sbin/smbd"),
        std::string("/usr/local/samba/sbin/smbd"), std::string("/usr/local/sbin/smbd")}) {
    char real[PATH_MAX];
    if (p.empty() || !::realpath(p.c_str(), real)) continue;
    struct stat st {};
    // Root's binary, writable by root only: a user's copy is no smbd of this host.
    if (::stat(real, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022)) continue;
    if (std::find(out.begin(), out.end(), real) == out.end()) out.emplace_back(real);
  }
  return out;
}

bool is_real_smbd(const std::string& proc_root, int pid,
                  const std::vector<std::string>& smbd_paths) {
  const std::string base = fmt::format("{}/{}", proc_root, pid);
  std::string status;
  if (!read_file(base + "/status", &status)) return false;
  // "Uid:\treal\teffective\tsaved\tfs": a user cannot make a process whose real uid is 0.
  const size_t at = status.find("\nUid:");
  if (at == std::string::npos) return false;
  unsigned long uid = 1;
  if (std::sscanf(status.c_str() + at + 5, "%lu", &uid) != 1 || uid != 0) return false;
  char buf[PATH_MAX];
  const ssize_t n = ::readlink((base + "/exe").c_str(), buf, sizeof buf - 1);
  if (n < 0) return errno == EACCES || errno == EPERM;  // root's, and we are not root
  std::string exe(buf, static_cast<size_t>(n));
  // The package was upgraded under a running smbd: the path it ran from.
  static const std::string kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() &&
      exe.compare(exe.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    exe.resize(exe.size() - kDeleted.size());
  }
  return std::find(smbd_paths.begin(), smbd_paths.end(), exe) != smbd_paths.end();
}

std::string samba_config_path(const std::string& planned, std::string* how,
                              const std::string& proc_root, bool* served_here) {
  if (served_here != nullptr) *served_here = false;
  if (!planned.empty()) {
    *how = "plan";
    if (served_here != nullptr) *served_here = true;
    return planned;
  }
  // The running smbd's own: in our network namespace first (a lab's other host or
  // a container may run another).
  std::string best, best_how;
  bool best_local = false;
  const std::vector<std::string> smbd_paths = installed_smbd_paths();
  for (const os::NamedProcess& p : os::processes_named(proc_root, "smbd")) {
    // A user's own `smbd -s ~/x/smb.conf` is not this host's Samba.
    if (!is_real_smbd(proc_root, p.pid, smbd_paths)) continue;
    // Without the right to read its namespace (no root), assume this host's.
    if (served_here != nullptr && (p.local_netns || p.netns_denied)) *served_here = true;
    if (!best_how.empty() && (best_local || !p.local_netns)) continue;
    best = smbd_config_from_cmdline(p.cmdline);
    best_how = fmt::format("running smbd (pid {})", p.pid);
    best_local = p.local_netns;
  }
  if (!best.empty()) {
    *how = best_how;
    return best;
  }
  return compiled_samba_config(how);
}

std::string compiled_samba_config(std::string* how) {
  // smbd uses its compiled-in path: `smbd -b` prints it as "   CONFIGFILE: /etc/samba/smb.conf".
  if (const std::string smbd = find_program("smbd"); !smbd.empty()) {
    try {
      RunResult r = run_command({smbd, "-b"}, "", 10);
      const size_t at = r.out.find("CONFIGFILE:");
      if (at != std::string::npos) {
        const size_t eol = r.out.find('\n', at);
        std::string path(
            trim(r.out.substr(at + 11, eol == std::string::npos ? eol : eol - at - 11)));
        if (!path.empty()) {
          *how = "smbd -b";
          return path;
        }
      }
    } catch (const Error&) {
    }
  }
  *how = "default";
  return "/etc/samba/smb.conf";
}

namespace {

// The effective config at `path` as samba_facts describes it (found by
// `how`); nullopt when `path` does not exist and `optional_file`.
std::optional<msg::SambaFacts> read_samba_config(const std::string& path, const std::string& how,
                                                 bool optional_file) {
  msg::SambaFacts f;
  f.config_path = path;
  std::string text;
  if (!read_file(f.config_path, &text)) {
    if (optional_file) return std::nullopt;
    f.error = fmt::format("cannot read {}: {}", f.config_path, errno_text(errno));
    return f;
  }
  std::string source = "file";
  if (const std::string testparm = find_program("testparm"); !testparm.empty()) {
    try {
      // testparm resolves includes and drops defaults, so two configs that
      // mean the same hash the same. It exits 1 on warnings yet prints.
      RunResult r = run_command({testparm, "-s", "--suppress-prompt", f.config_path}, "", 20);
      if (r.out.find("[global]") != std::string::npos) {
        text = r.out;
        source = "testparm";
      }
    } catch (const Error&) {
    }
  }
  f.found_by = how;
  f.source = source;
  f.sha256 = sha256_hex(text);
  f.global = parse_samba_globals(text);
  f.shares = parse_samba_shares(text);
  if (source == "testparm") {
    try {
      // Every parameter's effective value (-v), synonyms and includes
      // resolved: one process where one per name would cost 16. A share
      // lists what it sets apart from [global], under canonical names.
      RunResult r = run_command(
          {find_program("testparm"), "-s", "-v", "--suppress-prompt", f.config_path}, "", 20);
      merge_samba_effective(f.global, parse_samba_globals(r.out));
      if (r.out.find("[global]") != std::string::npos) f.shares = parse_samba_shares(r.out);
    } catch (const Error&) {
    }
  }
  return f;
}

}  // namespace

std::optional<msg::SambaFacts> samba_facts(const std::string& conf_path) {
  std::string how;
  const std::string path = samba_config_path(conf_path, &how);
  return read_samba_config(path, how, how == "default" || how == "smbd -b");
}

std::vector<msg::SambaFacts> samba_instances(const std::string& proc_root) {
  std::vector<msg::SambaFacts> out;
  const std::vector<std::string> smbd_paths = installed_smbd_paths();
  const std::map<int, os::ProcessTimes> procs = os::read_processes(proc_root);
  std::vector<os::NamedProcess> roots;
  for (const os::NamedProcess& p : os::processes_named(proc_root, "smbd")) {
    // An instance is its process tree's root: smbd's per-client children not.
    auto self = procs.find(p.pid);
    auto parent = self == procs.end() ? procs.end() : procs.find(self->second.ppid);
    if (parent != procs.end() && parent->second.comm == "smbd") continue;
    if (is_real_smbd(proc_root, p.pid, smbd_paths)) roots.push_back(p);
  }
  std::sort(roots.begin(), roots.end(),
            [](const os::NamedProcess& a, const os::NamedProcess& b) { return a.pid < b.pid; });
  std::stable_partition(roots.begin(), roots.end(),
                        [](const os::NamedProcess& p) { return p.local_netns; });
  // One read per config: several instances (labs, containers) may share one.
  std::map<std::string, std::optional<msg::SambaFacts>> by_path;
  for (const os::NamedProcess& p : roots) {
    std::string path = smbd_config_from_cmdline(p.cmdline);
    std::string how = "running smbd";
    if (path.empty()) path = compiled_samba_config(&how);
    auto [it, fresh] = by_path.try_emplace(path);
    if (fresh) it->second = read_samba_config(path, how, false);
    msg::SambaFacts f = *it->second;
    f.pid = p.pid;
    // Without the pid (it is `pid`): compare diffs the instance's facts, and
    // a restart changes no fact.
    f.found_by = "running smbd";
    out.push_back(std::move(f));
  }
  return out;
}

const std::vector<std::string>& samba_parameters_asked() {
  // The verdict's table of costly settings (analysis/costly_settings.h) and
  // tune's knob table (tune/knobs.cc) name these; an app test holds them to it.
  static const std::vector<std::string> kNames = {
      "smb2 max read",  "smb2 max write",      "smb2 max trans",     "sync always",
      "strict sync",    "server smb encrypt",  "server signing",     "aio read size",
      "aio write size", "use sendfile",        "socket options",     "server multi channel support",
      "max xmit",       "server min protocol", "server max protocol"};
  return kNames;
}

void merge_samba_effective(msg::NamedValues& global, const msg::NamedValues& verbose) {
  for (const std::string& name : samba_parameters_asked()) {
    const std::optional<std::string>* value = nullptr;
    for (const msg::NamedValue& v : verbose) {
      if (v.name == name) value = &v.value;
    }
    if (value == nullptr) continue;  // an older Samba without it
    auto same = [&](const msg::NamedValue& v) { return v.name == name; };
    if (auto it = std::find_if(global.begin(), global.end(), same); it != global.end()) {
      it->value = *value;
    } else {
      global.push_back({name, *value});
    }
  }
}

std::optional<msg::BlockDeviceFacts> dir_device_facts(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  auto device = block_device_facts(major(st.st_dev), minor(st.st_dev));
  if (device) return device;
  // btrfs and friends give files an anonymous st_dev: try the device the mount names.
  MountEntry mount;
  try {
    mount = mount_of(path);
  } catch (const Error&) {
    return std::nullopt;
  }
  struct stat src;
  if (mount.source.rfind("/dev/", 0) == 0 && ::stat(mount.source.c_str(), &src) == 0 &&
      S_ISBLK(src.st_mode)) {
    return block_device_facts(major(src.st_rdev), minor(src.st_rdev));
  }
  return std::nullopt;
}

std::optional<msg::BlockDeviceFacts> block_device_facts(unsigned maj, unsigned min,
                                                        const std::string& sys_root) {
  const std::optional<os::BlockDevice> d = os::block_device(maj, min, sys_root);
  if (!d) return std::nullopt;
  auto bus = [](const os::BusLink& b) {
    return msg::BusFacts{b.kind, b.link, b.ceiling_bytes_per_s};
  };
  msg::BlockDeviceFacts f{d->name,
                          d->disk,
                          d->partition,
                          d->read_ahead_kb,
                          unless_empty(d->scheduler),
                          d->rotational,
                          unless_empty(d->backing_file),
                          d->slaves};
  if (d->bus) f.bus = bus(*d->bus);
  for (const auto& [member, b] : d->member_buses) f.member_buses.push_back({member, bus(b)});
  return f;
}

std::optional<uint64_t> parse_tc_qdisc_rate(std::string_view tc_json) {
  boost::system::error_code ec;
  json::value v = json::parse(tc_json, ec);
  if (ec || !v.is_array()) return std::nullopt;
  std::optional<uint64_t> best;
  for (const json::value& q : v.as_array()) {
    if (!q.is_object()) continue;
    const json::value* kind = q.as_object().if_contains("kind");
    const json::value* options = q.as_object().if_contains("options");
    if (kind == nullptr || !kind->is_string() || options == nullptr || !options->is_object()) {
      continue;
    }
    const json::object& opt = options->as_object();
    std::optional<uint64_t> bytes;
    const json::string& k = kind->as_string();
    if (k == "tbf" || k == "netem") {
      bytes = json_rate(opt.if_contains("rate"));
    } else if (k == "cake") {
      bytes = json_rate(opt.if_contains("bandwidth"));
    }
    if (bytes) {
      const uint64_t bits = *bytes * 8;  // tc reports bytes/s
      best = best ? std::min(*best, bits) : bits;
    }
  }
  return best;
}

std::optional<uint64_t> parse_tc_htb_root_rate(std::string_view tc_text) {
  std::optional<uint64_t> best;
  for (std::string_view line : split_nonempty(tc_text, '\n')) {
    const std::vector<std::string_view> words = split_nonempty(line, ' ');
    if (words.size() < 4 || words[0] != "class" || words[1] != "htb") continue;
    if (std::find(words.begin(), words.end(), "root") == words.end()) continue;
    auto rate = std::find(words.begin(), words.end(), "rate");
    if (rate == words.end() || rate + 1 == words.end()) continue;
    try {
      const uint64_t bits = parse_rate_bits(*(rate + 1), "htb rate");
      best = best ? std::max(*best, bits) : bits;
    } catch (const Error&) {
    }
  }
  return best;
}

std::string parse_scheduler(std::string_view text) {
  size_t open = text.find('[');
  size_t close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open != std::string_view::npos && close != std::string_view::npos) {
    return std::string(trim(text.substr(open + 1, close - open - 1)));
  }
  return std::string(trim(text));
}

std::string parse_os_release(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string line(trim(text.substr(pos, eol - pos)));
    pos = eol + 1;
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string value = line.substr(12);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    std::string out;  // undo shell escapes: \" \\ \$ \`
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '\\' && i + 1 < value.size()) ++i;
      out += value[i];
    }
    return out;
  }
  return {};
}

std::vector<msg::DegradedFact> degraded_facts(const std::vector<os::DegradedFact>& facts) {
  std::vector<msg::DegradedFact> out;
  for (const os::DegradedFact& d : facts) out.push_back({d.fact, d.method, d.privilege});
  return out;
}

std::optional<msg::ZfsFacts> zfs_facts(const std::string& fs_type, const std::string& proc_root) {
  if (fs_type != "zfs") return std::nullopt;
  msg::ZfsFacts o;
  if (const std::optional<os::ArcStats> arc = os::read_arc_stats(proc_root)) {
    o.arc_c_max_bytes = arc->c_max;
    o.arc_size_bytes = arc->size;
  }
  return o;
}

msg::Facts collect_facts(const FactsRequest& req) {
  msg::Facts f;
  // The directories first: they are the only failures that throw.
  f.ram_dir = dir_facts("ram_dir", req.ram_dir, false);
  f.disk_dir = dir_facts("disk_dir", req.disk_dir, true);

  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) == 0) f.hostname = unless_empty(host);
  f.os = unless_empty(read_os());
  utsname u{};
  if (::uname(&u) == 0) {
    f.kernel = unless_empty(u.release);
    f.arch = unless_empty(u.machine);
  }
  f.cpu_model = unless_empty(os::cpu_model());
  if (const long cores = ::sysconf(_SC_NPROCESSORS_ONLN); cores > 0) f.cpu_cores = cores;
  // The running kernel's random id: two ends with the same one share a machine (a lab
  // in namespaces, containers), so their CPUs are one pool.
  f.boot_id = unless_empty(os::boot_id());
  if (const uint64_t mem = os::memory_bytes(); mem > 0) f.memory_bytes = mem;
  if (!req.peer_address.empty()) f.net = net_facts(req.peer_address);
  f.tcp_sysctls = tcp_sysctl_facts();
  if (req.samba) f.samba = samba_facts(req.samba_conf);
  // The same end: its other file servers' settings (never a client's).
  if (req.samba) f.file_servers = server_config_facts();
  // Every smbd on this host with its own config (a NAS app's beside the
  // system's): the verdict reads the one that served a sample.
  if (req.samba) f.samba_instances = samba_instances();
  f.euid = static_cast<uint64_t>(::geteuid());
  // What this agent measured with a lesser method, for want of a privilege.
  const std::string disk_fs = f.disk_dir && f.disk_dir->fs_type ? *f.disk_dir->fs_type : "";
  std::string how, smb_conf;
  bool samba = false;  // the plan names smbd's config, or one runs in this host
  if (req.samba) smb_conf = samba_config_path(req.samba_conf, &how, "/proc", &samba);
  f.degraded = degraded_facts(
      os::degraded_facts(os::privilege_context(disk_fs, samba, how == "default" ? "" : smb_conf)));
  return f;
}

}  // namespace cp::probe
