// An endpoint of a diagnosis: the agent running on a host, reached over
// SSH (deployed there first) or started locally as a subprocess.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace cp::remote {

class AgentLink;

struct EndpointSpec {
  std::string role;        // "server" | "client", for messages
  std::string host;        // "local", or an SSH destination ([user@]host or alias)
  std::string ssh_config;  // empty: ~/.ssh/config
  bool accept_new_host_keys = false;
  std::string agent_path;  // this build's agent; empty: find_agent_binary()
};

// This build's agent binary: $CHOKEPOINT_AGENT, else the first chokepoint-agent
// in server_agent_dir()'s directories. Throws Error(kConfig) when none exists.
std::string find_agent_binary();

// The directories holding the agents (chokepoint-agent, and the static server
// agents chokepoint-agent-server-ARCH from scripts/build-agents.sh), ':'-separated
// in search order: PREFIX/libexec/chokepoint beside an installed PREFIX/bin/chokepoint,
// the running executable's own directory, $CHOKEPOINT_AGENT_DIR.
std::string server_agent_dir();

// The machines (`uname -m`) that the ':'-separated `dirs` have a server agent for, sorted.
std::vector<std::string> server_agent_archs(const std::string& dirs);

// Which agent binary goes to a remote host, by its `uname -s` / `uname -m`.
struct AgentChoice {
  std::string path;  // local file to upload
  std::string kind;  // "server" (static, no protocol client) | "full"
};
// A server end ("server", "clean": no protocol client needed) on Linux gets
// the static server agent for its machine, the first chokepoint-agent-server-ARCH
// in the ':'-separated `server_dir`;
// without one, the full agent `full_agent` where the host's platform is this
// build's (`local_os`/`local_arch`). A client end needs the full agent, so the
// same platform. Returns nullopt when no binary of this build fits.
std::optional<AgentChoice> choose_agent(const std::string& role, const std::string& os,
                                        const std::string& arch, const std::string& local_os,
                                        const std::string& local_arch,
                                        const std::string& full_agent,
                                        const std::string& server_dir);
// The Error(kUnsupported) for a host no binary fits (and no chokepoint-agent
// on its PATH): names the host's OS and machine, what this build has, and the fix.
Error no_agent_error(const std::string& endpoint, const std::string& role, const std::string& os,
                     const std::string& arch, const std::string& local_os,
                     const std::string& local_arch, const std::string& server_dir);

// Hex SHA-256 of a file's bytes.
std::string sha256_file(const std::string& path);

// The remote agent cache directory as the deployment probe saw it: `ls_ldn`
// is its `ls -ldn` line ("" when it does not exist yet), `is_link` whether it
// is a symlink, `uid` the SSH user's. The Error(kRemote) that refuses it, with
// the fix, when it is a symlink, no directory, another user's, or group- or
// world-writable (anyone who can write there could swap the agent chokepoint
// runs as that user); nullopt when it is fit (or absent: the upload makes it 0700).
std::optional<Error> cache_dir_problem(const std::string& endpoint, const std::string& dir,
                                       const std::string& ls_ldn, bool is_link,
                                       const std::string& uid);

class Endpoint {
 public:
  // Connects, deploys and starts the agent, and completes the handshake.
  // `log` receives one line per notable step ("uploaded agent to ...").
  static std::unique_ptr<Endpoint> open(const EndpointSpec& spec,
                                        const std::function<void(const std::string&)>& log);
  // Closes the agent's channel (it cleans up and exits), then the session.
  ~Endpoint();

  AgentLink& agent() { return *link_; }
  const std::string& role() const { return spec_.role; }
  const std::string& host() const { return spec_.host; }
  // How the agent got there: "local", "uploaded", "cached", "PATH".
  const std::string& deployment() const { return deployment_; }
  // Which agent runs there: "server" (the static server agent), "full", or
  // "PATH" (the host's own chokepoint-agent).
  const std::string& agent_kind() const { return agent_kind_; }
  // The address other endpoints use by default to reach this one.
  const std::string& default_data_address() const { return data_address_; }
  std::string describe() const;  // "server (cp-server)"

 private:
  Endpoint() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<AgentLink> link_;
  EndpointSpec spec_;
  std::string deployment_, data_address_, agent_kind_;
};

}  // namespace cp::remote
