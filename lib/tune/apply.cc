#include "tune/apply.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/process.h"
#include "core/text.h"
#include "probe/sysinfo.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

std::string squeeze(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Writes in place (the inode, its mode and owner stay: smb.conf comes back
// byte-identical and as it was); sysfs and procfs files take one write.
void write_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot open {} for writing: {}", path, std::strerror(errno)));
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

std::string sysctl_path(const std::string& key) {
  std::string p = key;
  std::replace(p.begin(), p.end(), '.', '/');
  return "/proc/sys/" + p;
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

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
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

std::string user_name() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : std::to_string(::geteuid());
}

// argv[0] by full path (sudoers rules name programs so), searching PATH and
// the sbin directories a login shell of a non-root user may lack.
std::string full_path(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return prog;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    const std::string dir = path.substr(start, colon - start);
    if (!dir.empty() && ::access((dir + "/" + prog).c_str(), X_OK) == 0) return dir + "/" + prog;
    if (colon == std::string::npos) return prog;
    start = colon + 1;
  }
}

// What root would run for an action, as a command line (writes: tee, removes: rm -f).
std::vector<std::string> privileged_argv(const Action& a) {
  std::vector<std::string> argv;
  if (a.kind == "run") {
    argv = a.argv;
  } else if (a.kind == "write") {
    argv = {"tee", a.path};
  } else {
    argv = {"rm", "-f", a.path};
  }
  if (!argv.empty()) argv[0] = full_path(argv[0]);
  return argv;
}

// `sudo -n -l CMD...` exits 0 when a rule lets this user run CMD without a password.
bool sudo_allows(const std::vector<std::string>& argv) {
  if (full_path("sudo") == "sudo") return false;  // not installed
  std::vector<std::string> check = {"sudo", "-n", "-l"};
  check.insert(check.end(), argv.begin(), argv.end());
  return run_command(check, {}, 30).exit_code == 0;
}

bool needs_sudo(const Knob& knob) { return knob.privilege == "root" && ::geteuid() != 0; }

[[noreturn]] void throw_privilege(const Knob& knob, const std::vector<Action>& actions,
                                  const std::string& cmd) {
  const std::string user = user_name();
  throw Error(ErrorKind::kUnsupported,
              fmt::format("knob {} needs root on the {} to run `{}`: the agent runs as {}, and "
                          "`sudo -n` may not run it",
                          knob.name, knob.endpoint.empty() ? "host" : knob.endpoint, cmd, user),
              fmt::format("connect to that host as root (ssh root@host), or grant {} a "
                          "passwordless sudo rule (visudo -f /etc/sudoers.d/chokepoint): {}",
                          user, sudoers_line(user, actions)));
}

// A read a knob needs (blockdev --getra, hdparm -W): directly, else through
// `sudo -n` when the agent is not root and a rule allows it.
RunResult run_read(const Knob& knob, const std::vector<std::string>& argv) {
  std::vector<std::string> full = argv;
  full[0] = full_path(full[0]);
  RunResult got = run_command(full, {}, 30);
  if (got.exit_code == 0 || !needs_sudo(knob)) return got;
  Action a;
  a.kind = "run";
  a.argv = argv;
  if (!sudo_allows(full)) throw_privilege(knob, {a}, shell_join(argv));
  std::vector<std::string> sudo = {"sudo", "-n"};
  sudo.insert(sudo.end(), full.begin(), full.end());
  return run_command(sudo, {}, 30);
}

void mark_sudo(const Knob& knob, Resolved& r) {
  if (!needs_sudo(knob)) return;
  for (auto* list : {&r.apply, &r.revert}) {
    for (auto& a : *list) a.sudo = true;
  }
}

json::value action_json(const Action& a) {
  json::object o;
  o["kind"] = a.kind;
  if (a.kind == "run") {
    json::array argv;
    for (const auto& w : a.argv) argv.push_back(json::value(w));
    o["argv"] = std::move(argv);
  } else {
    o["path"] = a.path;
    if (a.kind == "write") o["content"] = a.content;
  }
  if (a.sudo) o["sudo"] = true;
  return o;
}

Action action_from(const json::value& v) {
  const auto& o = v.as_object();
  Action a;
  a.kind = std::string(o.at("kind").as_string());
  if (a.kind == "run") {
    for (const auto& w : o.at("argv").as_array()) a.argv.emplace_back(w.as_string());
  } else {
    a.path = std::string(o.at("path").as_string());
    if (a.kind == "write") a.content = std::string(o.at("content").as_string());
  }
  a.sudo = o.contains("sudo") && o.at("sudo").as_bool();
  return a;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::string parse_addr_ifname(const std::string& out) {
  // "3: cpd-s    inet 198.19.6.1/24 ..." (the name may carry "@peer").
  std::istringstream in(out);
  std::string index, name;
  if (!(in >> index >> name)) return {};
  return name.substr(0, name.find('@'));
}

std::string parse_route_dev(const std::string& out) {
  std::istringstream in(out);
  for (std::string w; in >> w;) {
    if (w == "dev") {
      std::string dev;
      in >> dev;
      return dev;
    }
  }
  return {};
}

int parse_link_mtu(const std::string& out) {
  std::istringstream in(out);
  for (std::string w; in >> w;) {
    if (w == "mtu") {
      int mtu = 0;
      in >> mtu;
      return mtu;
    }
  }
  return 0;
}

std::string ssh_local_address(const char* ssh_connection) {
  if (!ssh_connection) return {};
  std::istringstream in(ssh_connection);
  std::string cip, cport, sip;
  if (!(in >> cip >> cport >> sip)) return {};
  return sip;
}

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

std::string sudoers_line(const std::string& user, const std::vector<Action>& actions) {
  std::vector<std::string> cmds;
  for (const auto& a : actions) {
    std::vector<std::string> argv = privileged_argv(a);
    // Programs without their arguments (values change per slot); tee and rm
    // with the file they may change.
    std::string c = a.kind == "run" ? argv.front() : shell_join(argv);
    if (std::find(cmds.begin(), cmds.end(), c) == cmds.end()) cmds.push_back(c);
  }
  std::string out = user + " ALL=(root) NOPASSWD: ";
  for (size_t i = 0; i < cmds.size(); ++i) out += (i ? ", " : "") + cmds[i];
  return out;
}

std::string merge_samba_dropin(const std::string& old, const std::string& param,
                               const std::string& value) {
  static const std::string kHeader = "# written by chokepoint tune; removed when it reverts";
  std::vector<std::pair<std::string, std::string>> params;
  if (old.rfind(kHeader, 0) == 0) {
    std::stringstream in(old);
    for (std::string l; std::getline(in, l);) {
      const size_t eq = l.find('=');
      if (eq == std::string::npos || trim(l).rfind('#', 0) == 0) continue;
      params.emplace_back(trim(l.substr(0, eq)), trim(l.substr(eq + 1)));
    }
  }
  auto same = [](const std::string& a, const std::string& b) {
    std::string x = squeeze(a), y = squeeze(b);
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x == y;
  };
  bool found = false;
  for (auto& [p, v] : params) {
    if (same(p, param)) {
      v = value;
      found = true;
    }
  }
  if (!found) params.emplace_back(param, value);
  std::string out = kHeader + "\n[global]\n";
  for (const auto& [p, v] : params) out += fmt::format("\t{} = {}\n", p, v);
  return out;
}

std::string set_afp_param(const std::string& conf, const std::string& param,
                          const std::string& value, std::string* current) {
  std::vector<std::string> lines;
  std::stringstream in(conf);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  auto lower = [](std::string x) {
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return squeeze(x);
  };
  const std::string want = lower(param);
  long global = -1, end = static_cast<long>(lines.size()), at = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t(trim(lines[i]));
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
      if (global >= 0) {
        end = static_cast<long>(i);
        break;
      }
      if (lower(t.substr(1, t.size() - 2)) == "global") global = static_cast<long>(i);
      continue;
    }
    if (global < 0 || t.empty() || t.front() == '#' || t.front() == ';') continue;
    const size_t eq = t.find('=');
    if (eq != std::string::npos && lower(t.substr(0, eq)) == want) {
      at = static_cast<long>(i);
      if (current) *current = trim(t.substr(eq + 1));
    }
  }
  if (at < 0 && current) current->clear();
  const std::string line = param + " = " + value;
  if (at >= 0) {
    lines[static_cast<size_t>(at)] = line;
  } else if (global < 0) {
    lines.insert(lines.begin(), {"[Global]", line});
  } else {
    long pos = end;
    while (pos - 1 > global && trim(lines[static_cast<size_t>(pos - 1)]).empty()) --pos;
    lines.insert(lines.begin() + pos, line);
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string add_samba_include(const std::string& conf, const std::string& dropin) {
  const std::string line = "include = " + dropin;
  // Split into lines, keeping whether the text ended with a newline.
  std::vector<std::string> lines;
  std::stringstream in(conf);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (const auto& l : lines) {
    if (squeeze(l) == squeeze(line)) return conf;
  }
  auto section_of = [](const std::string& l) -> std::string {
    const std::string t(trim(l));
    if (t.size() < 2 || t.front() != '[' || t.back() != ']') return {};
    std::string name = t.substr(1, t.size() - 2);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::string(trim(name));
  };
  // The include goes last in [global], so it overrides earlier global lines.
  long global = -1, end = static_cast<long>(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string s = section_of(lines[i]);
    if (s.empty()) continue;
    if (global < 0 && s == "global") {
      global = static_cast<long>(i);
    } else if (global >= 0) {
      end = static_cast<long>(i);
      break;
    }
  }
  if (global < 0) {
    lines.insert(lines.begin(), {"[global]", "\t" + line});
  } else {
    // Before the blank lines that close the section.
    long at = end;
    while (at - 1 > global && trim(lines[static_cast<size_t>(at - 1)]).empty()) --at;
    lines.insert(lines.begin() + at, "\t" + line);
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

namespace {
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
      r.original = squeeze(text);
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

Resolved resolve(const Knob& knob, const std::string& value, const Where& where) {
  Resolved r = resolve_here(knob, value, where);
  mark_sudo(knob, r);
  return r;
}

void check_privilege(const Knob& knob, const std::vector<Action>& actions) {
  if (!needs_sudo(knob)) return;
  for (const auto& a : actions) {
    if (!sudo_allows(privileged_argv(a))) throw_privilege(knob, actions, a.display());
  }
}

void run_actions(const Knob& knob, const std::vector<Action>& actions) {
  check_privilege(knob, actions);
  const bool sudo = needs_sudo(knob);
  for (const auto& a : actions) {
    if (sudo) {
      std::vector<std::string> argv = {"sudo", "-n"};
      for (const auto& w : privileged_argv(a)) argv.push_back(w);
      RunResult res = run_command(argv, a.kind == "write" ? a.content : std::string(), 60);
      if (res.exit_code != 0) {
        throw Error(ErrorKind::kIo, fmt::format("knob {}: `{}` failed (exit {}): {}", knob.name,
                                                shell_join(argv), res.exit_code, trim(res.err)));
      }
      continue;
    }
    if (a.kind == "run") {
      std::vector<std::string> argv = a.argv;
      argv[0] = full_path(argv[0]);  // a non-root PATH may lack the sbin directories
      RunResult res = run_command(argv, {}, 60);
      if (res.exit_code != 0) {
        throw Error(ErrorKind::kIo,
                    fmt::format("knob {}: `{}` failed (exit {}): {}", knob.name, a.display(),
                                res.exit_code, trim(res.err + " " + res.out)));
      }
    } else if (a.kind == "write") {
      try {
        write_file(a.path, a.content);
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

std::string journal_dir() {
  if (const char* d = std::getenv("CHOKEPOINT_TUNE_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/chokepoint";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/state/chokepoint";
}

std::string journal_path() { return journal_dir() + "/tune-journal-" + host_name() + ".json"; }

Journal::Journal(std::string path) : path_(std::move(path)) {}

Journal::~Journal() { unlock(); }

bool Journal::lock(bool wait) {
  if (lock_fd_ >= 0) return true;
  std::error_code ec;
  std::filesystem::create_directories(dir_of(path_), ec);
  const std::string lp = path_ + ".lock";
  int fd = ::open(lp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot open the tune journal's lock {}: {}", lp,
                                            std::strerror(errno)));
  }
  if (::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  lock_fd_ = fd;
  return true;
}

void Journal::unlock() {
  if (lock_fd_ < 0) return;
  ::close(lock_fd_);  // releases the flock
  lock_fd_ = -1;
}

std::vector<JournalEntry> Journal::load() const {
  std::string text;
  if (!read_file(path_, &text) || trim(text).empty()) return {};
  std::vector<JournalEntry> out;
  try {
    json::value v = json::parse(text);
    for (const auto& e : v.as_object().at("entries").as_array()) {
      const auto& o = e.as_object();
      JournalEntry j;
      j.knob = std::string(o.at("knob").as_string());
      j.target = std::string(o.at("target").as_string());
      j.original = std::string(o.at("original").as_string());
      for (const auto& a : o.at("revert").as_array()) j.revert.push_back(action_from(a));
      out.push_back(std::move(j));
    }
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kIo,
                fmt::format("the tune journal {} cannot be read ({}): its changes cannot be "
                            "reverted automatically",
                            path_, e.what()),
                "restore the values it names by hand, then delete it");
  }
  return out;
}

void Journal::save(const std::vector<JournalEntry>& entries) const {
  if (entries.empty()) {
    ::unlink(path_.c_str());
    return;
  }
  json::array arr;
  for (const auto& e : entries) {
    json::array rev;
    for (const auto& a : e.revert) rev.push_back(action_json(a));
    arr.push_back(json::object{{"knob", e.knob},
                               {"target", e.target},
                               {"original", e.original},
                               {"revert", std::move(rev)}});
  }
  json::object doc{{"version", 1},
                   {"host", host_name()},
                   {"pid", static_cast<int64_t>(::getpid())},
                   {"entries", std::move(arr)}};
  // Durable before the first change: tmp file, fsync, rename, fsync the dir.
  const std::string tmp = path_ + ".tmp";
  write_file(tmp, json::serialize(doc) + "\n");
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot write the tune journal {}: {}", path_, std::strerror(errno)));
  }
  int dfd = ::open(dir_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<JournalEntry> Journal::entries() const { return load(); }

Resolved Journal::apply(const Knob& knob, const std::string& value, const Where& where) {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("another chokepoint tune session holds {}.lock: it has knobs applied "
                            "on this host",
                            path_),
                "wait for it to end, or run `chokepoint tune --revert HOST` once it is gone");
  }
  return apply_resolved(knob, resolve(knob, value, where));
}

Resolved Journal::apply_resolved(const Knob& knob, Resolved r) {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("another chokepoint tune session holds {}.lock", path_),
                "wait for it to end, or run `chokepoint tune --revert HOST` once it is gone");
  }
  check_privilege(knob, r.apply);
  check_privilege(knob, r.revert);
  std::vector<JournalEntry> entries = load();
  const bool known = std::any_of(entries.begin(), entries.end(), [&](const JournalEntry& e) {
    return e.knob == knob.name && e.target == r.target;
  });
  if (!known) {
    entries.push_back({knob.name, r.target, r.original, r.revert});
    save(entries);
  }
  run_actions(knob, r.apply);
  return r;
}

std::vector<Reverted> Journal::revert_all() {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("a live chokepoint tune session holds {}.lock: it reverts its own "
                            "changes when it ends",
                            path_),
                "wait for that session to end (or stop it with Ctrl-C), then retry");
  }
  std::vector<JournalEntry> entries = load();
  std::vector<Reverted> out;
  std::vector<JournalEntry> left;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    Reverted r{it->knob, it->target, it->original, {}};
    try {
      Knob k{it->knob, "", Mechanism::kSysctl, "", ValueKind::kText, {}, "root", ""};
      run_actions(k, it->revert);
    } catch (const Error& e) {
      r.error = describe(e);
      left.insert(left.begin(), *it);
    }
    out.push_back(std::move(r));
  }
  save(left);
  if (left.empty()) unlock();
  return out;
}

std::vector<Reverted> Journal::revert_stale() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return {};
  if (!lock(false)) return {};  // a live session holds it
  std::vector<Reverted> out = revert_all();
  unlock();
  return out;
}

}  // namespace cp::tune
