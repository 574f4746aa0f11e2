// The built-in two-host lab (`chokepoint lab up|status|down`): two "hosts" on
// this machine, each a network namespace with its own mount and UTS
// namespace, joined by a shaped veth pair (the data link) and each running an
// sshd reachable from the root namespace over its own management veth, so
// `chokepoint diagnose --lab` SSHes into them as into real machines.
//
// Everything the lab makes is recorded in <dir>/lab.json at `up` and removed
// from that record at `down`. All of it needs root.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cp::lab {

struct LabOptions {
  uint64_t rate_bits = 0;            // data link rate, bit/s; 0: unshaped
  int mtu = 1500;                    // data link MTU, bytes
  double delay_s = 0;                // one-way delay added on each data end, seconds; needs netem
  uint64_t disk_bytes = 3ull << 30;  // size of each host's ext4 image
  uint64_t ram_bytes = 2ull << 30;   // size of each host's tmpfs
};

struct LabHost {
  std::string role;          // "server" | "client"
  std::string netns;         // "cp-server"
  std::string alias;         // Host entry in ssh_config: "cp-server"
  std::string hostname;      // UTS hostname inside: "cp-server"
  std::string mgmt_address;  // sshd listens here: "198.18.1.2"
  std::string data_address;  // on the shaped link: "198.18.0.1"
  std::string data_ifname;   // "cpd-s"
  std::string ram_dir;       // tmpfs inside the host (an empty dir outside)
  std::string disk_dir;      // ext4 on loop_device inside the host
  std::string loop_device;   // "/dev/loop3"; empty until attached
  int sshd_pid = 0;          // the host's holder process; 0 until started
};

struct LabState {
  std::string dir;          // absolute lab dir
  std::string ssh_config;   // <dir>/ssh_config: `ssh -F` it
  std::string identity;     // <dir>/id_ed25519: the key both hosts accept for root
  std::string known_hosts;  // <dir>/known_hosts: both hosts' keys
  LabHost server, client;
  LabOptions options;
};

// $CHOKEPOINT_LAB_DIR when set and non-empty, else /var/lib/chokepoint-lab.
std::string default_dir();

// Brings the lab up in `dir`, or, when a healthy lab is already up there,
// re-applies rate/mtu/delay in place without restarting the hosts (disk and
// ram sizes then stay as they are). On any failure it removes what it made
// and rethrows. Throws Error(kUnsupported) when not root, or for a delay on a
// kernel without netem (before changing anything).
LabState up(const LabOptions& opts, const std::string& dir = default_dir());

// Removes everything the lab in `dir` made, from its lab.json, and the dir.
// Idempotent; also cleans up after a partial `up`.
void down(const std::string& dir = default_dir());

// The recorded state; nullopt when there is no lab in `dir`. Throws
// Error(kConfig) when lab.json is unreadable.
std::optional<LabState> load(const std::string& dir = default_dir());

// True when both namespaces exist and both sshds are alive in them; else
// false with the reason in *why (when why is not null).
bool healthy(const LabState& state, std::string* why);

}  // namespace cp::lab
