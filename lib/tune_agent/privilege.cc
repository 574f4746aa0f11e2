// Privilege for knobs on a host where the agent is not root: every action
// goes through `sudo -n`, as the wrapper chokepoint ships
// (scripts/chokepoint-knob: the knob table's operations only) when an admin
// installed it, else as the exact command a sudo rule names.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/process.h"
#include "core/text.h"
#include "tune_agent/apply.h"
#include "tune_agent/detail.h"

namespace cp::tune {
namespace {

// Where an admin installs the wrapper: root's, writable by root only, so a
// sudo rule naming it grants nothing but what it accepts.
std::string installed_wrapper() {
  for (const char* p : {"/usr/local/sbin/chokepoint-knob", "/usr/sbin/chokepoint-knob"}) {
    struct stat st {};
    if (::lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022)) {
      return p;
    }
  }
  return {};
}

// The exact command root runs for an action (writes: tee FILE, removes: rm -f FILE).
std::vector<std::string> exact_argv(const Action& a) {
  std::vector<std::string> argv;
  if (a.kind == "run") {
    argv = a.argv;
  } else if (a.kind == "write") {
    argv = {"tee", a.path};
  } else {
    argv = {"rm", "-f", a.path};
  }
  if (!argv.empty()) argv[0] = detail::full_path(argv[0]);
  return argv;
}

// A sudoers command argument: ',', ':', '=' and '\' escaped (sudoers(5)).
std::string sudoers_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ',' || c == ':' || c == '=' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool sudo_allows(const std::vector<std::string>& argv) {
  if (argv.empty() || detail::full_path("sudo") == "sudo") return false;  // not installed
  std::vector<std::string> check = {"sudo", "-n", "-l"};
  check.insert(check.end(), argv.begin(), argv.end());
  return run_command(check, {}, 30).exit_code == 0;
}

// An action the wrapper has no operation for rewrites a config file that
// names programs the server runs as root (smb.conf, afp.conf).
bool grants_root(const Action& a) { return wrapper_operation(a).empty(); }

[[noreturn]] void throw_privilege(const Knob& knob, const std::vector<Action>& actions,
                                  const std::string& cmd) {
  const std::string user = detail::user_name();
  const std::string what =
      fmt::format("knob {} needs root on the {} to run `{}`: the agent runs as {}", knob.name,
                  knob.endpoint.empty() ? "host" : knob.endpoint, cmd, user);
  const auto root_only = std::find_if(actions.begin(), actions.end(), grants_root);
  if (root_only != actions.end()) {
    throw Error(ErrorKind::kUnsupported,
                what + fmt::format("; `{}` rewrites a config file that names programs the server "
                                   "runs as root, so any sudo rule for it grants root",
                                   root_only->display()),
                "connect to that host as root (ssh root@host)");
  }
  throw Error(ErrorKind::kUnsupported, what + ", and `sudo -n` may not run it",
              sudo_advice(user, actions));
}

}  // namespace

namespace detail {

std::string user_name() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : std::to_string(::geteuid());
}

// Sudoers rules name programs by full path; a non-root PATH may lack sbin.
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

std::vector<std::string> privileged_argv(const Action& a) {
  const std::string wrapper = installed_wrapper();
  if (wrapper.empty()) return exact_argv(a);
  std::vector<std::string> op = wrapper_operation(a);
  if (op.empty()) return {};
  op.insert(op.begin(), wrapper);
  return op;
}

bool needs_sudo(const Knob& knob) { return knob.privilege == "root" && ::geteuid() != 0; }

RunResult run_read(const Knob& knob, const std::vector<std::string>& argv) {
  std::vector<std::string> full = argv;
  full[0] = full_path(full[0]);
  RunResult got = run_command(full, {}, 30);
  if (got.exit_code == 0 || !needs_sudo(knob)) return got;
  Action a;
  a.kind = "run";
  a.argv = argv;
  const std::vector<std::string> priv = privileged_argv(a);
  if (!sudo_allows(priv)) throw_privilege(knob, {a}, shell_join(argv));
  std::vector<std::string> sudo = {"sudo", "-n"};
  sudo.insert(sudo.end(), priv.begin(), priv.end());
  return run_command(sudo, {}, 30);
}

void mark_sudo(const Knob& knob, Resolved& r) {
  if (!needs_sudo(knob)) return;
  for (auto* list : {&r.apply, &r.revert}) {
    for (auto& a : *list) a.sudo = true;
  }
}

}  // namespace detail

std::vector<std::string> wrapper_operation(const Action& a) {
  const auto& v = a.argv;
  if (a.kind == "run") {
    if (v.size() == 4 && v[0] == "blockdev" && v[1] == "--setra") return {"setra", v[2], v[3]};
    if (v.size() == 3 && v[0] == "blockdev" && v[1] == "--getra") return {"getra", v[2]};
    if (v.size() == 4 && v[0] == "hdparm" && v[1] == "-W") return {"write-cache", v[2], v[3]};
    if (v.size() == 3 && v[0] == "hdparm" && v[1] == "-W") return {"write-cache", v[2]};
    if (v.size() == 7 && v[0] == "ip" && v[1] == "link" && v[2] == "set" && v[3] == "dev" &&
        v[5] == "mtu") {
      return {"mtu", v[4], v[6]};
    }
    return {};
  }
  if (a.kind != "write") return {};
  const std::string value(trim(a.content));
  static const std::string kBlock = "/sys/block/", kSys = "/proc/sys/";
  if (a.path.rfind(kBlock, 0) == 0) {
    const std::string rest = a.path.substr(kBlock.size());
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.compare(slash, 7, "/queue/") != 0) return {};
    return {"queue", rest.substr(0, slash), rest.substr(slash + 7), value};
  }
  if (a.path.rfind(kSys, 0) == 0) {
    std::string key = a.path.substr(kSys.size());
    std::replace(key.begin(), key.end(), '/', '.');
    return {"sysctl", key, value};
  }
  return {};
}

std::string sudoers_line(const std::string& user, const std::vector<Action>& actions) {
  std::vector<std::string> cmds;
  for (const auto& a : actions) {
    std::string c;
    for (const auto& w : exact_argv(a)) c += (c.empty() ? "" : " ") + sudoers_escape(w);
    if (std::find(cmds.begin(), cmds.end(), c) == cmds.end()) cmds.push_back(c);
  }
  std::string out = user + " ALL=(root) NOPASSWD: ";
  for (size_t i = 0; i < cmds.size(); ++i) out += (i ? ", " : "") + cmds[i];
  return out;
}

std::string sudo_advice(const std::string& user, const std::vector<Action>& actions) {
  return fmt::format(
      "connect to that host as root (ssh root@host); or install the wrapper chokepoint ships "
      "(`install -o root -g root -m 0755 scripts/chokepoint-knob /usr/local/sbin/chokepoint-knob`) "
      "and grant it with visudo -f /etc/sudoers.d/chokepoint: `{0} ALL=(root) NOPASSWD: "
      "/usr/local/sbin/chokepoint-knob`: that runs as root only the knob table's operations "
      "(readahead and write cache of a block device, a disk's scheduler and max_sectors_kb, the "
      "table's sysctls, an interface's MTU), each value checked, and refuses anything else; or "
      "grant exactly this value's commands: `{1}`: each entry runs that one command with those "
      "arguments as root (tee FILE: writes anything to that one file)",
      user, sudoers_line(user, actions));
}

void check_privilege(const Knob& knob, const std::vector<Action>& actions) {
  if (!detail::needs_sudo(knob)) return;
  for (const auto& a : actions) {
    if (grants_root(a) || !sudo_allows(detail::privileged_argv(a))) {
      throw_privilege(knob, actions, a.display());
    }
  }
}

}  // namespace cp::tune
