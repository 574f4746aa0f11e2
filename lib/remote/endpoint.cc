#include "remote/endpoint.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/process.h"
#include "remote/agent_link.h"
#include "remote/ssh.h"

namespace cp::remote {

namespace fs = std::filesystem;

struct Endpoint::Impl {
  std::unique_ptr<SshSession> ssh;
  std::unique_ptr<Child> child;
};

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
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "chokepoint-agent";
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  throw Error(ErrorKind::kConfig, "cannot find chokepoint-agent beside this chokepoint binary",
              "build it (cmake --build build) or set CHOKEPOINT_AGENT to its path");
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

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// key=value lines from the bootstrap probe.
std::map<std::string, std::string> parse_kv(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// Runs on the remote through its login shell; prints key=value lines.
// The cache dir is per user; the file name carries the build's checksum so a
// different build never runs a stale agent.
constexpr const char* kProbeScript =
    "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/chokepoint\"; "
    "printf 'os=%s\\narch=%s\\ndir=%s\\n' \"$(uname -s)\" \"$(uname -m)\" \"$d\"; "
    "[ -x \"$d/$1\" ] && echo cached=yes; "
    "printf 'path=%s\\n' \"$(command -v chokepoint-agent 2>/dev/null)\"";

constexpr const char* kUploadScript =
    "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/chokepoint\"; umask 077 && mkdir -p \"$d\" && "
    "t=\"$d/.upload.$$\" && cat > \"$t\" && [ \"$(wc -c < \"$t\")\" -eq \"$2\" ] && "
    "chmod 700 \"$t\" && mv -f \"$t\" \"$d/$1\" || { rm -f \"$t\"; exit 1; }";

std::string sh_command(const char* script, const std::vector<std::string>& args) {
  std::string cmd = "sh -c " + shell_quote(script) + " chokepoint";
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return cmd;
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
    ep->data_address_ = "127.0.0.1";
    ep->link_->handshake(30);
    return ep;
  }

  SshTarget target{spec.host, spec.ssh_config, spec.accept_new_host_keys};
  ep->impl_->ssh = std::make_unique<SshSession>(target);
  SshSession& ssh = *ep->impl_->ssh;
  ep->data_address_ = ssh.host_name();

  const std::string agent = spec.agent_path.empty() ? find_agent_binary() : spec.agent_path;
  const std::string file = "chokepoint-agent-" + sha256_file(agent).substr(0, 16);
  ExecResult probe = ssh.exec(sh_command(kProbeScript, {file}), {}, 30);
  auto kv = parse_kv(probe.out);
  if (!kv.count("os") || !kv.count("dir")) {
    throw Error(ErrorKind::kRemote,
                fmt::format("{}: the remote shell did not answer the deployment probe "
                            "(exit {}): {}",
                            name, probe.exit_code, probe.err.empty() ? probe.out : probe.err),
                "chokepoint needs a POSIX sh on the remote");
  }
  utsname u{};
  uname(&u);
  const bool same_platform = kv["os"] == u.sysname && kv["arch"] == u.machine;
  std::string remote_agent;
  if (same_platform) {
    remote_agent = kv["dir"] + "/" + file;
    if (kv["cached"] == "yes") {
      ep->deployment_ = "cached";
    } else {
      const std::string bytes = read_file(agent);
      ExecResult up =
          ssh.exec(sh_command(kUploadScript, {file, std::to_string(bytes.size())}), bytes, 300);
      if (up.exit_code != 0) {
        throw Error(ErrorKind::kRemote,
                    fmt::format("{}: uploading the agent to {} failed (exit {}): {}", name,
                                kv["dir"], up.exit_code, up.err),
                    "check free space and permissions of that directory (or set XDG_CACHE_HOME "
                    "there)");
      }
      ep->deployment_ = "uploaded";
      log(fmt::format("{}: uploaded agent to {}", name, remote_agent));
    }
  } else if (!kv["path"].empty()) {
    remote_agent = kv["path"];
    ep->deployment_ = "PATH";
  } else {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("{} runs {} {}, this chokepoint was built for {} {}, and it has no "
                            "chokepoint-agent on its PATH",
                            name, kv["os"], kv["arch"], u.sysname, u.machine),
                "build chokepoint on that host (or a matching machine) and put chokepoint-agent "
                "on its PATH, then rerun");
  }
  ep->link_ = std::make_unique<AgentLink>(
      ssh.exec_stream("exec " + shell_quote(remote_agent) + " --serve"), name);
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
