#include "remote/ssh.h"

#include <libssh/libssh.h>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "core/wire.h"

namespace cp::remote {

struct SshSession::Impl {
  ssh_session s = nullptr;
  ~Impl() {
    if (s) {
      ssh_disconnect(s);
      ssh_free(s);
    }
  }
};

namespace {

std::string fingerprint(ssh_session s) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(s, &key) != SSH_OK) return "?";
  unsigned char* hash = nullptr;
  size_t len = 0;
  std::string out = "?";
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) == 0) {
    char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
    if (fp) {
      out = fp;
      ssh_string_free_char(fp);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return out;
}

std::string option_string(ssh_session s, ssh_options_e opt) {
  char* v = nullptr;
  if (ssh_options_get(s, opt, &v) != SSH_OK || !v) return {};
  std::string out = v;
  ssh_string_free_char(v);
  return out;
}

class ChannelStream : public ByteStream {
 public:
  ChannelStream(ssh_channel ch, std::string name) : ch_(ch), name_(std::move(name)) {}
  ~ChannelStream() override {
    if (ssh_channel_is_open(ch_)) {
      ssh_channel_send_eof(ch_);
      ssh_channel_close(ch_);
    }
    ssh_channel_free(ch_);
  }

  ReadResult read(char* buf, size_t size, double timeout_s) override {
    drain_stderr();
    int n = ssh_channel_read_timeout(ch_, buf, static_cast<uint32_t>(size), 0,
                                     static_cast<int>(timeout_s * 1000));
    if (n == SSH_ERROR) return {0, true};
    if (n > 0) return {static_cast<size_t>(n), false};
    if (ssh_channel_is_eof(ch_) || !ssh_channel_is_open(ch_)) {
      drain_stderr();
      return {0, true};
    }
    return {};
  }

  void write(std::string_view data) override {
    while (!data.empty()) {
      int n = ssh_channel_write(ch_, data.data(), static_cast<uint32_t>(data.size()));
      if (n <= 0) {
        throw Error(ErrorKind::kRemote, fmt::format("{}: the SSH channel is closed", name_));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  std::string stderr_text() override {
    drain_stderr();
    return err_;
  }

 private:
  void drain_stderr() {
    char buf[4096];
    for (;;) {
      int n = ssh_channel_read_nonblocking(ch_, buf, sizeof buf, 1);
      if (n <= 0) break;
      if (err_.size() < 16384) err_.append(buf, static_cast<size_t>(n));
    }
  }

  ssh_channel ch_;
  std::string name_;
  std::string err_;
};

}  // namespace

std::string keygen_remove_command(const std::string& host, const std::string& known_hosts_file) {
  if (known_hosts_file.empty()) return "ssh-keygen -R " + shell_quote(host);
  return "ssh-keygen -R " + shell_quote(host) + " -f " + shell_quote(known_hosts_file);
}

SshSession::SshSession(const SshTarget& t) : impl_(std::make_unique<Impl>()), name_(t.host) {
  ssh_session s = impl_->s = ssh_new();
  CP_CHECK(s != nullptr);
  std::string host = t.host;
  if (auto at = host.find('@'); at != std::string::npos) {
    ssh_options_set(s, SSH_OPTIONS_USER, host.substr(0, at).c_str());
    host = host.substr(at + 1);
  }
  ssh_options_set(s, SSH_OPTIONS_HOST, host.c_str());
  long timeout = static_cast<long>(t.connect_timeout_s);
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  if (ssh_options_parse_config(s, t.config_file.empty() ? nullptr : t.config_file.c_str()) != 0) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("cannot read SSH config '{}': {}",
                    t.config_file.empty() ? "~/.ssh/config" : t.config_file, ssh_get_error(s)),
        "fix the file or point --ssh-config at another one");
  }
  host_name_ = option_string(s, SSH_OPTIONS_HOST);
  user_ = option_string(s, SSH_OPTIONS_USER);
  // Set only when the config names a UserKnownHostsFile (else ~/.ssh/known_hosts).
  const std::string known_hosts = option_string(s, SSH_OPTIONS_KNOWNHOSTS);

  if (ssh_connect(s) != SSH_OK) {
    throw Error(ErrorKind::kRemote,
                fmt::format("cannot connect to {} ({}): {}", name_, host_name_, ssh_get_error(s)),
                "check the host name and that sshd runs there (`ssh " + name_ + " true`)");
  }

  const std::string fp = fingerprint(s);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      throw Error(ErrorKind::kRemote,
                  fmt::format("the host key of {} ({}) CHANGED: it now shows {}. This may be an "
                              "attack, or the host was reinstalled",
                              name_, host_name_, fp),
                  fmt::format("if you know why, remove the old key with `{}` and rerun with "
                              "--accept-new-host-keys",
                              keygen_remove_command(host_name_, known_hosts)));
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      if (!t.accept_new_host_keys) {
        throw Error(
            ErrorKind::kRemote,
            fmt::format("{} ({}) is not in known_hosts; its key is {}", name_, host_name_, fp),
            fmt::format("check the fingerprint, then rerun with --accept-new-host-keys "
                        "(or connect once with `ssh {}`)",
                        name_));
      }
      if (ssh_session_update_known_hosts(s) != SSH_OK) {
        throw Error(ErrorKind::kRemote,
                    fmt::format("cannot add {} to known_hosts: {}", name_, ssh_get_error(s)));
      }
      break;
    case SSH_KNOWN_HOSTS_ERROR:
      throw Error(ErrorKind::kRemote,
                  fmt::format("cannot check the host key of {}: {}", name_, ssh_get_error(s)));
  }

  // ssh-agent first, then the default and configured identity files.
  int rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  if (rc != SSH_AUTH_SUCCESS) {
    throw Error(ErrorKind::kRemote,
                fmt::format("SSH login to {} as '{}' was refused ({})", name_, user_,
                            rc == SSH_AUTH_DENIED ? "no key was accepted" : ssh_get_error(s)),
                fmt::format("load a key into ssh-agent or name one with IdentityFile in "
                            "{}, and authorise it there (`ssh-copy-id {}`); "
                            "password logins are not supported",
                            t.config_file.empty() ? "~/.ssh/config" : t.config_file, name_));
  }
}

SshSession::~SshSession() = default;

namespace {
ssh_channel open_exec(ssh_session s, const std::string& name, const std::string& command) {
  ssh_channel ch = ssh_channel_new(s);
  CP_CHECK(ch != nullptr);
  if (ssh_channel_open_session(ch) != SSH_OK ||
      ssh_channel_request_exec(ch, command.c_str()) != SSH_OK) {
    std::string err = ssh_get_error(s);
    ssh_channel_free(ch);
    throw Error(ErrorKind::kRemote,
                fmt::format("{}: cannot run a command over SSH: {}", name, err));
  }
  return ch;
}
}  // namespace

ExecResult SshSession::exec(const std::string& command, std::string_view input, double timeout_s,
                            size_t max_output) {
  ssh_channel ch = open_exec(impl_->s, name_, command);
  ExecResult res;
  size_t off = 0;
  while (off < input.size()) {
    const size_t chunk = std::min<size_t>(input.size() - off, 1u << 20);
    int n = ssh_channel_write(ch, input.data() + off, static_cast<uint32_t>(chunk));
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ssh_channel_send_eof(ch);
  const double deadline = monotonic_seconds() + timeout_s;
  char buf[65536];
  for (;;) {
    if (monotonic_seconds() > deadline) {
      ssh_channel_close(ch);
      ssh_channel_free(ch);
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: remote command did not finish in {:.0f} s", name_, timeout_s));
    }
    int n = ssh_channel_read_timeout(ch, buf, sizeof buf, 0, 200);
    if (n > 0) res.out.append(buf, static_cast<size_t>(n));
    int e;
    while ((e = ssh_channel_read_nonblocking(ch, buf, sizeof buf, 1)) > 0 &&
           res.err.size() <= max_output) {
      res.err.append(buf, static_cast<size_t>(e));
    }
    if (res.out.size() > max_output || res.err.size() > max_output) {
      ssh_channel_close(ch);
      ssh_channel_free(ch);
      throw Error(ErrorKind::kRemote,
                  fmt::format("{}: remote command '{}' printed over {} bytes on its {}, the cap",
                              name_, wire::printable(command, 80), max_output,
                              res.out.size() > max_output ? "stdout" : "stderr"),
                  "the remote shell or host is not behaving as a POSIX sh (check its login "
                  "scripts: `ssh HOST true` should print nothing)");
    }
    if (n == SSH_ERROR) break;
    if (n == 0 && (ssh_channel_is_eof(ch) || !ssh_channel_is_open(ch))) break;
  }
  res.exit_code = ssh_channel_get_exit_status(ch);
  ssh_channel_close(ch);
  ssh_channel_free(ch);
  return res;
}

std::unique_ptr<ByteStream> SshSession::exec_stream(const std::string& command) {
  return std::make_unique<ChannelStream>(open_exec(impl_->s, name_, command), name_);
}

}  // namespace cp::remote
