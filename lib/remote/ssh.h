// SSH to an endpoint with libssh, the way OpenSSH would: ~/.ssh/config (or
// the given file) resolves aliases, known_hosts is enforced, ssh-agent and
// key files authenticate.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "link/stream.h"

namespace cp::remote {

struct SshTarget {
  std::string host;                   // alias or host name, optionally user@host
  std::string config_file;            // empty: ~/.ssh/config
  bool accept_new_host_keys = false;  // add unknown host keys to known_hosts
  double connect_timeout_s = 15;
};

// exec's default output cap, bytes per stream: deployment commands print lines.
inline constexpr size_t kMaxExecOutput = 1u << 20;

struct ExecResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The command that removes `host`'s old key: from `known_hosts_file` (a
// UserKnownHostsFile the SSH config names), else from ~/.ssh/known_hosts.
std::string keygen_remove_command(const std::string& host, const std::string& known_hosts_file);

class SshSession {
 public:
  // Connects, checks the host key, authenticates. Errors say how to fix them.
  explicit SshSession(const SshTarget& target);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // Runs `command` through the remote shell to completion, feeding `input`.
  // Its stdout and its stderr are each capped at `max_output` bytes: past
  // it the command is abandoned with Error(kRemote) naming it and the cap
  // (a hostile or broken host cannot fill the orchestrator's memory).
  ExecResult exec(const std::string& command, std::string_view input = {}, double timeout_s = 120,
                  size_t max_output = kMaxExecOutput);
  // Starts `command` and returns its stdin/stdout as a stream (stderr is
  // collected for messages). The session must outlive the stream.
  std::unique_ptr<ByteStream> exec_stream(const std::string& command);

  const std::string& host_name() const { return host_name_; }  // after config: HostName
  const std::string& user() const { return user_; }
  const std::string& name() const { return name_; }  // as given

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_, host_name_, user_;
};

}  // namespace cp::remote
