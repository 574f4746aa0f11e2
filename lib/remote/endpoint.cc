#include "remote/endpoint.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/process.h"
#include "core/text.h"
#include "core/wire.h"
#include "link/agent_link.h"
#include "remote/ssh.h"

namespace cp::remote {

namespace fs = std::filesystem;

struct Endpoint::Impl {
  std::unique_ptr<SshSession> ssh;
  std::unique_ptr<Child> child;
};

namespace {
constexpr const char* kServerAgentPrefix = "chokepoint-agent-server-";

// Where this build's agents are, in search order: PREFIX/libexec/chokepoint
// for a chokepoint installed as PREFIX/bin/chokepoint (cmake --install, the
// .deb), the running executable's own directory (a build tree: build/bin),
// then $CHOKEPOINT_AGENT_DIR.
std::vector<fs::path> agent_dirs() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(self.parent_path().parent_path() / "libexec" / "chokepoint");
    dirs.push_back(self.parent_path());
  }
  if (const char* env = std::getenv("CHOKEPOINT_AGENT_DIR"); env && *env) dirs.emplace_back(env);
  return dirs;
}

// The first executable `name` in the ':'-separated directories `dirs`.
std::optional<fs::path> first_in(const std::string& dirs, const std::string& name) {
  for (std::string_view d : split(dirs, ':')) {
    if (d.empty()) continue;
    const fs::path p = fs::path(d) / name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return std::nullopt;
}
}  // namespace

std::string find_agent_binary() {
  if (const char* env = std::getenv("CHOKEPOINT_AGENT"); env && *env) {
    if (access(env, X_OK) != 0) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("CHOKEPOINT_AGENT names '{}', which is not an "
                              "executable file",
                              env),
                  "unset it, or point it at a built chokepoint-agent");
    }
    return env;
  }
  if (auto p = first_in(server_agent_dir(), "chokepoint-agent")) return p->string();
  throw Error(ErrorKind::kConfig,
              fmt::format("cannot find chokepoint-agent (looked in {})", server_agent_dir()),
              "build it (cmake --build build), install chokepoint (cmake --install build), or set "
              "CHOKEPOINT_AGENT to its path");
}

std::string server_agent_dir() {
  std::string dirs;
  for (const fs::path& d : agent_dirs()) dirs += (dirs.empty() ? "" : ":") + d.string();
  return dirs.empty() ? std::string(".") : dirs;
}

std::vector<std::string> server_agent_archs(const std::string& dirs) {
  std::vector<std::string> archs;
  const std::string prefix = kServerAgentPrefix;
  for (std::string_view dir : split(dirs, ':')) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir), ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
          access(e.path().c_str(), X_OK) == 0) {
        archs.push_back(name.substr(prefix.size()));
      }
    }
  }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

std::optional<AgentChoice> choose_agent(const std::string& role, const std::string& os,
                                        const std::string& arch, const std::string& local_os,
                                        const std::string& local_arch,
                                        const std::string& full_agent,
                                        const std::string& server_dir) {
  // The server end's requests (disk, TCP, CPU, facts, share files) need no
  // protocol client: the static agent runs on any Linux of its machine,
  // whatever libraries it has.
  const bool server_side = role == "server" || role == "clean";
  if (server_side && os == "Linux" && arch.find('/') == std::string::npos && !arch.empty()) {
    if (auto p = first_in(server_dir, kServerAgentPrefix + arch)) {
      return AgentChoice{p->string(), "server"};
    }
  }
  if (os == local_os && arch == local_arch) return AgentChoice{full_agent, "full"};
  return std::nullopt;
}

Error no_agent_error(const std::string& endpoint, const std::string& role, const std::string& os,
                     const std::string& arch, const std::string& local_os,
                     const std::string& local_arch, const std::string& server_dir) {
  std::string have;
  for (const auto& a : server_agent_archs(server_dir)) have += (have.empty() ? "" : ", ") + a;
  const bool server_side = role == "server" || role == "clean";
  const bool buildable = arch == "x86_64" || arch == "aarch64";
  std::string hint;
  if (server_side && os == "Linux" && buildable) {
    hint = fmt::format(
        "build it with `scripts/build-agents.sh {}` (it lands in build/bin; or set "
        "CHOKEPOINT_AGENT_DIR to the directory holding chokepoint-agent-server-{})",
        arch, arch);
  } else if (server_side) {
    hint = fmt::format(
        "chokepoint builds server agents for Linux x86_64 and aarch64 only; for {} "
        "{}, build chokepoint on that host (or one like it) and put "
        "chokepoint-agent on its PATH",
        os, arch);
  } else {
    hint = fmt::format(
        "the client end runs the full agent (with the protocol clients), built "
        "for this host's platform ({} {}): use a client of that platform, or "
        "build chokepoint on that host and put chokepoint-agent on its PATH",
        local_os, local_arch);
  }
  return Error(ErrorKind::kUnsupported,
               fmt::format("{} runs {} {}: this chokepoint has no agent for it (full agent: {} "
                           "{}; static server agents in {}: {}), and that host has no "
                           "chokepoint-agent on its PATH",
                           endpoint, os, arch, local_os, local_arch,
                           server_dir.empty() ? std::string("(none)") : server_dir,
                           have.empty() ? "none" : have),
               hint);
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, fmt::format("cannot read '{}'", path));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    EVP_DigestUpdate(ctx, buf, static_cast<size_t>(in.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

namespace {

// The key=value lines of the bootstrap probe's output, in order (a key may
// repeat: cached=).
std::vector<std::pair<std::string, std::string>> probe_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (std::string_view line : split(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) lines.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return lines;
}

// The probe's keys, each with its last value.
std::map<std::string, std::string> parse_kv(const std::string& text) {
  std::map<std::string, std::string> kv;
  for (auto& [key, value] : probe_lines(text)) kv[key] = std::move(value);
  return kv;
}

// Runs on the remote through its login shell; prints key=value lines: the
// platform, the cache dir (per user) and how it stands, and each cached agent
// with its SHA-256 where the host has sha256sum. The file names carry the
// build's checksum so a different build never runs a stale agent.
constexpr const char* kProbeScript =
    "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/chokepoint\"; "
    "printf 'os=%s\\narch=%s\\ndir=%s\\nuid=%s\\n' \"$(uname -s)\" \"$(uname -m)\" \"$d\" "
    "\"$(id -u)\"; "
    "if [ -L \"$d\" ]; then echo dirlink=1; "
    "elif [ -e \"$d\" ]; then printf 'dirstat=%s\\n' \"$(ls -ldn \"$d\")\"; fi; "
    "s=; command -v sha256sum >/dev/null 2>&1 && s=1; echo \"sha256sum=$s\"; "
    "for f; do [ -f \"$d/$f\" ] && [ -x \"$d/$f\" ] || continue; h=; "
    "[ -n \"$s\" ] && { h=$(sha256sum < \"$d/$f\"); h=${h%% *}; }; echo \"cached=$f $h\"; done; "
    "printf 'path=%s\\n' \"$(command -v chokepoint-agent 2>/dev/null)\"";

// $1 file name, $2 size, $3 SHA-256: written beside, checked, then renamed
// into place. The dir is made 0700 and refused when it became a symlink.
constexpr const char* kUploadScript =
    "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/chokepoint\"; umask 077 && mkdir -p \"$d\" && "
    "[ ! -L \"$d\" ] && t=\"$d/.upload.$$\" && cat > \"$t\" && "
    "[ \"$(wc -c < \"$t\")\" -eq \"$2\" ] && "
    "{ ! command -v sha256sum >/dev/null 2>&1 || "
    "{ h=$(sha256sum < \"$t\") && [ \"${h%% *}\" = \"$3\" ]; }; } && "
    "chmod 700 \"$t\" && mv -f \"$t\" \"$d/$1\" || { rm -f \"$t\"; exit 1; }";

// $1 the agent, $2 its SHA-256: checked right before it runs, by sha256sum
// where the host has it, else by the agent itself (--self-check, which
// hashes /proc/self/exe). Exit 3 and a line on stderr when it differs.
constexpr const char* kRunScript =
    "if command -v sha256sum >/dev/null 2>&1; then "
    "h=$(sha256sum < \"$1\"); h=${h%% *}; "
    "if [ \"$h\" != \"$2\" ]; then echo \"chokepoint: refusing to run $1: its SHA-256 is "
    "${h:-unreadable}, not $2 as uploaded (it was altered or damaged)\" >&2; exit 3; fi; "
    "exec \"$1\" --serve; fi; exec \"$1\" --self-check \"$2\" --serve";

std::string sh_command(const char* script, const std::vector<std::string>& args) {
  std::string cmd = "sh -c " + shell_quote(script) + " chokepoint";
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return cmd;
}

}  // namespace

std::optional<Error> cache_dir_problem(const std::string& endpoint, const std::string& dir,
                                       const std::string& ls_ldn, bool is_link,
                                       const std::string& uid) {
  auto refuse = [&](const std::string& what, const std::string& fix) {
    return Error(ErrorKind::kRemote,
                 fmt::format("{}: the agent cache {} {}: chokepoint will not run an agent "
                             "from there",
                             endpoint, dir, what),
                 fix);
  };
  if (is_link) {
    return refuse("is a symlink",
                  fmt::format("remove the link (`rm {}`; chokepoint makes a 0700 directory "
                              "there), or set XDG_CACHE_HOME to a directory of yours",
                              shell_quote(dir)));
  }
  if (ls_ldn.empty()) return std::nullopt;
  const auto f = split_ws(ls_ldn);
  const std::string mode = f.empty() ? "" : std::string(f[0]);
  if (f.size() < 3 || mode.size() < 10) {
    return refuse(
        fmt::format("could not be checked (`ls -ldn` said '{}')", wire::printable(ls_ldn)),
        "check that directory by hand, or set XDG_CACHE_HOME to a directory of yours");
  }
  if (mode[0] != 'd') {
    return refuse(
        "is not a directory",
        fmt::format("remove it (`rm {}`), or set XDG_CACHE_HOME elsewhere", shell_quote(dir)));
  }
  if (f[2] != uid) {
    return refuse(fmt::format("is owned by uid {}, not by the SSH user (uid {})", f[2], uid),
                  fmt::format("have its owner or root remove it (`rm -r {}`), or set "
                              "XDG_CACHE_HOME to a directory of yours",
                              shell_quote(dir)));
  }
  if (mode[5] == 'w' || mode[8] == 'w') {
    return refuse(fmt::format("is group- or world-writable ({})", mode),
                  fmt::format("`chmod go-w {}` (chokepoint makes it 0700)", shell_quote(dir)));
  }
  return std::nullopt;
}

namespace {

// Cached agents from the probe: file name -> its SHA-256 on the host ("" when
// the host has no sha256sum).
std::map<std::string, std::string> cached_agents(const std::string& probe_out) {
  std::map<std::string, std::string> cached;
  for (const auto& [key, rest] : probe_lines(probe_out)) {
    if (key != "cached") continue;
    const size_t sp = rest.find(' ');
    cached[rest.substr(0, sp)] =
        sp == std::string::npos ? "" : std::string(trim(rest.substr(sp + 1)));
  }
  return cached;
}

}  // namespace

std::string Endpoint::describe() const { return fmt::format("{} ({})", spec_.role, spec_.host); }

std::unique_ptr<Endpoint> Endpoint::open(const EndpointSpec& spec,
                                         const std::function<void(const std::string&)>& log) {
  std::unique_ptr<Endpoint> ep(new Endpoint());
  ep->spec_ = spec;
  ep->impl_ = std::make_unique<Impl>();
  const std::string name = ep->describe();
  if (spec.host == "local") {
    const std::string agent = spec.agent_path.empty() ? find_agent_binary() : spec.agent_path;
    ep->impl_->child = std::make_unique<Child>(std::vector<std::string>{agent, "--serve"});
    Child& c = *ep->impl_->child;
    ep->link_ = std::make_unique<AgentLink>(
        make_fd_stream(dup(c.stdout_fd()), dup(c.stdin_fd()), name), name);
    c.close_stdin();
    ep->deployment_ = "local";
    ep->agent_kind_ = "full";
    ep->data_address_ = "127.0.0.1";
    ep->link_->handshake(30);
    return ep;
  }

  SshTarget target{spec.host, spec.ssh_config, spec.accept_new_host_keys};
  ep->impl_->ssh = std::make_unique<SshSession>(target);
  SshSession& ssh = *ep->impl_->ssh;
  ep->data_address_ = ssh.host_name();

  // Candidates: this build's full agent and its static server agents; the
  // file name on the host carries each binary's checksum, so a different
  // build never runs a stale agent.
  const std::string full = spec.agent_path.empty() ? find_agent_binary() : spec.agent_path;
  const std::string server_dir = spec.agent_path.empty() ? server_agent_dir() : std::string();
  std::map<std::string, std::string> remote_names;  // local path -> file name on the host
  std::map<std::string, std::string> hashes;        // local path -> its SHA-256
  auto remote_name = [&](const std::string& path, const std::string& stem) {
    hashes[path] = sha256_file(path);
    return stem + "-" + hashes[path].substr(0, 16);
  };
  remote_names[full] = remote_name(full, "chokepoint-agent");
  std::vector<std::string> names{remote_names[full]};
  if (!server_dir.empty()) {
    for (const auto& a : server_agent_archs(server_dir)) {
      const std::string p = first_in(server_dir, kServerAgentPrefix + a).value().string();
      remote_names[p] = remote_name(p, "chokepoint-agent-server");
      names.push_back(remote_names[p]);
    }
  }
  ExecResult probe = ssh.exec(sh_command(kProbeScript, names), {}, 30);
  auto kv = parse_kv(probe.out);
  if (!kv.count("os") || !kv.count("dir")) {
    throw Error(ErrorKind::kRemote,
                fmt::format("{}: the remote shell did not answer the deployment probe "
                            "(exit {}): {}",
                            name, probe.exit_code, probe.err.empty() ? probe.out : probe.err),
                "chokepoint needs a POSIX sh on the remote");
  }
  if (auto bad =
          cache_dir_problem(name, kv["dir"], kv["dirstat"], kv["dirlink"] == "1", kv["uid"])) {
    throw *bad;
  }
  const std::map<std::string, std::string> cached = cached_agents(probe.out);
  utsname u{};
  uname(&u);
  std::optional<AgentChoice> choice =
      choose_agent(spec.role, kv["os"], kv["arch"], u.sysname, u.machine, full,
                   server_dir.empty() ? std::string("/nonexistent") : server_dir);
  std::string remote_agent;
  if (choice) {
    const std::string file = remote_names.at(choice->path);
    remote_agent = kv["dir"] + "/" + file;
    ep->agent_kind_ = choice->kind;
    const std::string& hash = hashes.at(choice->path);
    auto hit = cached.find(file);
    // A cached agent whose bytes differ from this build's (its hash on the
    // host, where it has sha256sum) is replaced, never run.
    if (hit != cached.end() && !hit->second.empty() && hit->second != hash) {
      log(
          fmt::format("{}: the cached agent {} has SHA-256 {}, not this build's {}: uploading it "
                      "again",
                      name, remote_agent, wire::printable(hit->second, 64), hash));
      hit = cached.end();
    }
    if (hit != cached.end()) {
      ep->deployment_ = "cached";
    } else {
      const std::string bytes = cp::read_file(choice->path).value_or("");
      ExecResult up = ssh.exec(
          sh_command(kUploadScript, {file, std::to_string(bytes.size()), hash}), bytes, 300);
      if (up.exit_code != 0) {
        throw Error(ErrorKind::kRemote,
                    fmt::format("{}: uploading the agent to {} failed (exit {}): {}", name,
                                kv["dir"], up.exit_code, up.err),
                    "check free space and permissions of that directory (or set XDG_CACHE_HOME "
                    "there)");
      }
      ep->deployment_ = "uploaded";
      log(fmt::format("{}: uploaded the {} agent for {} {} to {}", name,
                      choice->kind == "server" ? "static server" : "full", kv["os"], kv["arch"],
                      remote_agent));
    }
  } else if (!kv["path"].empty()) {
    remote_agent = kv["path"];
    ep->deployment_ = "PATH";
    ep->agent_kind_ = "PATH";
  } else {
    throw no_agent_error(name, spec.role, kv["os"], kv["arch"], u.sysname, u.machine, server_dir);
  }
  // This build's agent is checked by SHA-256 on the host right before it
  // runs; the host's own (PATH) is its administrator's.
  const std::string run =
      choice ? "exec " + sh_command(kRunScript, {remote_agent, hashes.at(choice->path)})
             : "exec " + shell_quote(remote_agent) + " --serve";
  ep->link_ = std::make_unique<AgentLink>(ssh.exec_stream(run), name);
  ep->link_->handshake(30);
  return ep;
}

Endpoint::~Endpoint() {
  link_.reset();  // channel closes: the agent cleans up and exits
  if (!impl_) return;
  if (impl_->child) {
    // Never wait long on the agent (Ctrl-C ends a run within 2 s): a short
    // while for it to exit on EOF, then SIGTERM (it cleans up on that too,
    // when it wakes if it is stopped) and leave it; never SIGKILL, which
    // would leave its files behind.
    Child& c = *impl_->child;
    c.close_stdin();
    if (c.wait(0.1) < 0) {
      c.kill(SIGTERM);
      c.detach();
    }
    impl_->child.reset();
  }
  impl_->ssh.reset();
}

}  // namespace cp::remote
