// An endpoint of a diagnosis: the agent running on a host, reached over
// SSH (deployed there first) or started locally as a subprocess.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace cp::remote {

class AgentLink;

struct EndpointSpec {
  std::string role;        // "server" | "client", for messages
  std::string host;        // "local", or an SSH destination ([user@]host or alias)
  std::string ssh_config;  // empty: ~/.ssh/config
  bool accept_new_host_keys = false;
  std::string agent_path;  // this build's agent; empty: find_agent_binary()
};

// This build's agent binary: $CHOKEPOINT_AGENT, else chokepoint-agent
// beside the running executable. Throws Error(kConfig) when neither exists.
std::string find_agent_binary();

// Hex SHA-256 of a file's bytes.
std::string sha256_file(const std::string& path);

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
  // The address other endpoints use by default to reach this one.
  const std::string& default_data_address() const { return data_address_; }
  std::string describe() const;  // "server (cp-server)"

 private:
  Endpoint() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<AgentLink> link_;
  EndpointSpec spec_;
  std::string deployment_, data_address_;
};

}  // namespace cp::remote
