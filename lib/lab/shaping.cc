// The lab's traffic shaping: tc commands for each host's link and the
// switch (tbf rate, netem delay and loss), and telling a missing qdisc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"
#include "lab/layout.h"

namespace cp::lab {

uint64_t tbf_burst_bytes(uint64_t rate_bits, int mtu) {
  CP_CHECK(rate_bits > 0 && mtu > 0);
  // 1 ms worth of tokens, rounded up.
  const uint64_t per_ms = (rate_bits + 7999) / 8000;
  // A frame is the MTU plus the 14-byte Ethernet header tbf also counts.
  const uint64_t frames = 4 * (static_cast<uint64_t>(mtu) + 14);
  return std::max(per_ms, frames);
}

uint64_t netem_limit_packets(uint64_t rate_bits, double delay_s, int mtu) {
  const double rate = rate_bits > 0 ? static_cast<double>(rate_bits) : 10e9;
  const double packets = rate / 8 * delay_s / std::max(mtu, kMinMtu);
  return std::max<uint64_t>(1000, static_cast<uint64_t>(std::ceil(2 * packets)));
}

std::vector<Command> link_shaping_commands(const std::string& ns, const std::string& dev, int mtu,
                                           uint64_t rate_bits, double delay_s) {
  std::vector<Command> cmds;
  cmds.push_back({{"ip", "-n", ns, "link", "set", "dev", dev, "mtu", std::to_string(mtu)}});
  auto tbf = [&](std::vector<std::string> where) {
    std::vector<std::string> argv = {"tc", "-n", ns, "qdisc", "replace", "dev", dev};
    argv.insert(argv.end(), where.begin(), where.end());
    for (std::string a : {std::string("tbf"), std::string("rate"), fmt::format("{}bit", rate_bits),
                          std::string("burst"), std::to_string(tbf_burst_bytes(rate_bits, mtu)),
                          std::string("latency"), std::string(kTbfLatency)}) {
      argv.push_back(a);
    }
    return argv;
  };
  if (delay_s > 0) {
    // netem cannot be "replaced" under a different parent layout; start clean.
    cmds.push_back({{"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"}, true});
    const auto us = static_cast<uint64_t>(std::llround(delay_s * 1e6));
    cmds.push_back({{"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
                     "delay", fmt::format("{}us", us), "limit",
                     std::to_string(netem_limit_packets(rate_bits, delay_s, mtu))}});
    if (rate_bits > 0) cmds.push_back({tbf({"parent", "1:1", "handle", "10:"})});
  } else if (rate_bits > 0) {
    cmds.push_back({tbf({"root"})});
  } else {
    // Unshaped: back to the veth default (noqueue); fails harmlessly when already there.
    cmds.push_back({{"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"}, true});
  }
  return cmds;
}

std::vector<Command> shaping_commands(const LabHost& host, const LabOptions& o, bool with_delay) {
  return link_shaping_commands(host.netns, host.data_ifname, host_mtu(o, host.role), o.rate_bits,
                               with_delay ? o.delay_s : 0);
}

std::vector<Command> switch_create_commands(const LabState& s) {
  const std::string& sw = s.sw.netns;
  CP_CHECK(!sw.empty());
  return {
      // Best effort: a kernel without IPv6 has nothing to switch off.
      {{"ip", "netns", "exec", sw, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1"},
       true},
      {{"ip", "-n", sw, "link", "set", "dev", "lo", "up"}},
      {{"ip", "-n", s.server.netns, "link", "add", s.server.data_ifname, "type", "veth", "peer",
        "name", kSwitchServerPort, "netns", sw}},
      {{"ip", "-n", s.client.netns, "link", "add", s.client.data_ifname, "type", "veth", "peer",
        "name", kSwitchClientPort, "netns", sw}},
      {{"ip", "-n", sw, "link", "add", kSwitchBridge, "type", "bridge"}},
      {{"ip", "-n", sw, "link", "set", "dev", kSwitchBridge, "up"}},
  };
}

std::vector<Command> switch_port_commands(const LabState& s, const LabOptions& o, bool bridged,
                                          bool netem) {
  const std::string& sw = s.sw.netns;
  CP_CHECK(!sw.empty());
  std::vector<Command> cmds;
  for (const char* port : {kSwitchServerPort, kSwitchClientPort}) {
    for (Command& c :
         link_shaping_commands(sw, port, switch_mtu(o), o.path_rate_bits, netem ? o.delay_s : 0)) {
      cmds.push_back(std::move(c));
    }
    if (bridged) {
      cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "master", kSwitchBridge}});
    } else {
      cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "nomaster"}});
    }
    cmds.push_back({{"ip", "-n", sw, "link", "set", "dev", port, "up"}});
  }
  return cmds;
}

std::vector<std::string> netem_probe_command() {
  // A fresh, unnamed network namespace that vanishes when tc exits.
  return {"unshare", "--net", "--",   "tc",    "qdisc", "add",
          "dev",     "lo",    "root", "netem", "delay", "1ms"};
}

bool says_qdisc_unknown(std::string_view err) {
  return err.find("Specified qdisc kind is unknown") != std::string_view::npos ||
         err.find("Unknown qdisc") != std::string_view::npos;
}

}  // namespace cp::lab
