// `chokepoint lab status`: what is up, as seen from the root namespace and
// from inside each host (nsenter into its sshd's namespaces), as text or JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lab/delay_line.h"
#include "lab/lab.h"

namespace cp::lab {

struct MountView {
  bool mounted = false;
  std::string fstype;  // "tmpfs", "ext4"
  std::string source;  // "cp-ram", "/dev/loop3"
  uint64_t size_bytes = 0;
};

struct HostStatus {
  LabHost host;  // as recorded
  bool netns_present = false;
  bool sshd_alive = false;             // the recorded pid is an sshd in the host's namespace
  std::string hostname_inside;         // UTS hostname inside the host
  std::vector<std::string> addresses;  // "cpd-s 198.18.0.1/24", IPv4 only
  MountView ram, disk;                 // as seen inside the host
  int readahead_kib = -1;              // of the loop device; -1 unknown
  bool loop_direct_io = false;
  std::string qdisc;       // root qdisc kind(s) on the data end: "tbf", "netem+tbf"
  uint64_t rate_bits = 0;  // tbf rate, bit/s; 0 unshaped
  uint64_t burst_bytes = 0;
  double delay_s = 0;                 // netem delay, seconds
  int mtu = 0;                        // data end MTU, bytes; 0 unknown
  std::vector<std::string> problems;  // what could not be seen, and why
};

// One of the switch's ports as seen inside its namespace.
struct PortStatus {
  std::string ifname;  // "sw-s"
  std::string toward;  // "server" | "client": the host at its other end
  std::string qdisc;   // "tbf", "netem+tbf", "noqueue"
  uint64_t rate_bits = 0;
  uint64_t burst_bytes = 0;
  double delay_s = 0;  // netem's; the delay line's is in LabStatus
  int mtu = 0;
  bool bridged = false;  // enslaved to the switch's bridge
};

struct LabStatus {
  LabState state;
  bool healthy = false;
  std::string why;                // when not healthy
  std::vector<std::string> down;  // LabHealth::down
  HostStatus server, client;
  bool switch_present = false;
  std::vector<PortStatus> ports;  // empty in a lab from before the switch
  bool delay_line_alive = false;
  std::vector<DelayLineStats> delay_line;    // its counters (the stats file)
  std::vector<std::string> switch_problems;  // what could not be seen
  bool ftpd_alive = false;                   // the recorded vsftpd runs the lab's config
  bool smbd_alive = false;                   // the recorded smbd runs the lab's config
  bool nfsd_alive = false;                   // the recorded ganesha.nfsd runs the lab's config
};

// Looks at the running lab described by `state`. Never throws for what it
// cannot see; that goes into problems.
LabStatus gather_status(const LabState& state);

std::string status_text(const LabStatus& status);
// The shares, the login and the FTPS line (what `lab up` and `lab status` both print);
// "" when the lab has no servers.
std::string shares_text(const LabState& state);
std::string status_json(const LabStatus& status);
// For `status` when there is no lab (exit kExitNoLab): the `lab up` that
// starts that instance's lab; the JSON also names the instance.
std::string no_lab_text(int instance = 0);
std::string no_lab_json(int instance = 0);

// Parsers of tool output, exposed for tests.
// `tc -j qdisc show dev X`: fills qdisc, rate_bits, burst_bytes, delay_s.
void parse_qdiscs(std::string_view tc_json, HostStatus* out);
// `ip -j addr show`: "ifname addr/prefix" for each IPv4 address.
std::vector<std::string> parse_addresses(std::string_view ip_json);
// `ip -j link show dev X`: its MTU, 0 when unparsable.
int parse_mtu(std::string_view ip_json);
// `ip -j link show dev X`: the device it is enslaved to ("br0"), "" when none.
std::string parse_master(std::string_view ip_json);
// `findmnt -n -r -b -o FSTYPE,SIZE,SOURCE -M DIR`: one line, or empty when not mounted.
MountView parse_findmnt(std::string_view out);

}  // namespace cp::lab
