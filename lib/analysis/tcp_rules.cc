// The TCP chain: why a TCP row is where it is (a CPU, a window or buffer, the
// link, the path between the hosts, or other jobs' load), from its tcp_info,
// its CPU and both ends' interfaces.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/judge.h"
#include "core/error.h"
#include "core/units.h"

namespace cp::analysis {

// What the TCP rules read of one TCP row.
struct TcpCase {
  const Row& t;
  double path_bits = 0;  // the path's expected rate, bit/s: the nominal link, else the NICs
  bool nominal = false;  // set in the plan or by a shaper (else the interfaces' speed)
  double ratio = 0;      // median / path_bits
  bool above_link = false, at_link = false, steady = false;
  std::vector<Hint> buffers;  // buffer hints, each with its trigger
};

namespace {

std::string sysctl_of(const HostFacts& h, const char* key) {
  auto it = h.tcp_sysctls.find(key);
  return it == h.tcp_sysctls.end() ? std::string() : it->second;
}

// Buffer hints for a TCP that a window or buffer limits, each citing its trigger.
std::vector<Hint> buffer_hints(const Row& t, const Analysis& a, double path_bits) {
  std::vector<Hint> hints;
  const bool down = t.where == "server->client";
  const std::string sender = down ? "server" : "client", receiver = down ? "client" : "server";
  const HostFacts& rf = host_facts(a, receiver);
  const HostFacts& sf = host_facts(a, sender);
  // The window needed to fill the path: bandwidth x round-trip time.
  const double bdp = path_bits > 0 && t.rtt_us > 0 ? path_bits / 8 * t.rtt_us / 1e6 : 0;
  const uint64_t rmem = max_of_sysctl(sysctl_of(rf, "net.ipv4.tcp_rmem"));
  const bool rmem_short = bdp > 0 && rmem > 0 && double(rmem) < bdp;
  if (t.rwnd_limited_frac > kWindowLimited || rmem_short) {
    Hint h{"tcp.receive_buffer",
           {},
           {{"receiver", receiver},
            {"tcp_rmem", sysctl_of(rf, "net.ipv4.tcp_rmem")},
            {"rmem_max", sysctl_of(rf, "net.core.rmem_max")}}};
    if (t.rwnd_limited_frac > kWindowLimited) {
      h.numbers["rwnd_limited"] = t.rwnd_limited_frac;
    } else {
      h.numbers = {{"rmem", double(rmem)},
                   {"bdp", double(static_cast<uint64_t>(bdp))},
                   {"path_bits", path_bits},
                   {"rtt_ms", t.rtt_us / 1000}};
    }
    hints.push_back(std::move(h));
  }
  if (t.sndbuf_limited_frac > kWindowLimited) {
    hints.push_back(Hint{"tcp.send_buffer",
                         {{"sndbuf_limited", t.sndbuf_limited_frac}},
                         {{"sender", sender},
                          {"tcp_wmem", sysctl_of(sf, "net.ipv4.tcp_wmem")},
                          {"wmem_max", sysctl_of(sf, "net.core.wmem_max")}}});
  }
  return hints;
}

// The slower of both ends' interface speeds, bit/s (0: neither known).
double nic_bits(const Analysis& a) {
  double bits = 0;
  for (const char* role : {"server", "client"}) {
    const HostFacts& h = host_facts(a, role);
    if (h.nic_bits > 0) bits = bits == 0 ? h.nic_bits : std::min(bits, h.nic_bits);
  }
  return bits;
}

TcpCase tcp_case(const Row& t, const Analysis& a) {
  TcpCase c{t, 0, false, 0, false, false, false, {}};
  c.nominal = a.link_source.from == "plan" || host_facts(a, "server").shaped_bits > 0 ||
              host_facts(a, "client").shaped_bits > 0;
  c.path_bits = c.nominal ? a.link_bits : nic_bits(a);
  // A sample beyond the nominal speed shows it is no ceiling (a virtual link),
  // whatever the median: a link or a shaper is never exceeded.
  c.ratio = c.path_bits > 0 ? t.rate.median * 8 / c.path_bits : 0;
  c.above_link = c.path_bits > 0 && t.rate.max * 8 / c.path_bits > kAboveLink;
  c.at_link = c.ratio >= kShortTcp && !c.above_link;
  // The samples hold one rate, as a slower link or a shaper does; a CPU shared
  // with other jobs swings with their load.
  c.steady = t.rate.n >= kSteadySamples && t.rate.median > 0 &&
             (t.rate.max - t.rate.min) / t.rate.median <= kSteadyRate;
  c.buffers = buffer_hints(t, a, c.path_bits);
  return c;
}

// What every TCP finding cites: the tcp_info limits, retransmits, round trips
// and the path's expected rate.
void tcp_evidence(const TcpCase& c, const Analysis& a, Finding& f) {
  const Row& t = c.t;
  f.path = "tcp";
  f.subject = cite(t);
  if (t.rwnd_limited_frac > kWindowLimited) f.numbers["rwnd_limited_frac"] = t.rwnd_limited_frac;
  if (t.sndbuf_limited_frac > kWindowLimited) {
    f.numbers["sndbuf_limited_frac"] = t.sndbuf_limited_frac;
  }
  if (t.retransmits > 0) f.numbers["retransmits"] = double(t.retransmits);
  if (t.rtt_idle_us > 0 && t.rtt_us > 0) {
    f.numbers["rtt_idle_ms"] = t.rtt_idle_us / 1000;
    f.numbers["rtt_ms"] = t.rtt_us / 1000;
  }
  if (c.path_bits > 0) f.numbers["path_bits"] = c.path_bits;
  f.words["path_kind"] = c.nominal ? "link" : "interfaces";
  for (const char* role : {"server", "client"}) {
    const HostFacts& h = host_facts(a, role);
    if (h.nic_bits > 0) f.numbers[std::string(role) + "_nic_bits"] = h.nic_bits;
  }
}

void undecided_by_load(Finding& f, std::vector<std::string> candidates) {
  f.layer = "undecided";
  f.undecided_reason = "load";
  f.candidates = std::move(candidates);
}

// No limit chokepoint can see (window, buffer, CPU, link, path, loss):
// cannot tell, never a bare layer name.
void undecided_unexplained(Finding& f, std::vector<std::string> candidates) {
  f.layer = "undecided";
  f.undecided_reason = "unexplained";
  f.candidates = std::move(candidates);
}

}  // namespace

std::optional<Hint> mtu_hint(const Analysis& a) {
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    return Hint{"mtu.mismatch",
                {{"server_mtu", double(a.server_mtu)}, {"client_mtu", double(a.client_mtu)}},
                {}};
  }
  return std::nullopt;
}

std::string tcp_cap_key(const Analysis& a, const Row& t, const std::string& layer) {
  return layer == "network" && find_row(a, "link") ? "link" : t.key;
}

namespace rules {

// A thread of the endpoint at a core or a process at its quota (every core busy
// does not take a TCP already at the link's rate).
bool tcp_cpu(const Case& c, Finding& f) {
  if (!cpu_caps(c.tcp->t, c.tcp->at_link)) return false;
  set_cpu(f, c.tcp->t, c.a);
  return true;
}

bool tcp_window(const Case& c, Finding& f) {
  const Row& t = c.tcp->t;
  if (t.rwnd_limited_frac <= kWindowLimited && t.sndbuf_limited_frac <= kWindowLimited &&
      c.tcp->buffers.empty()) {
    return false;
  }
  f.layer = "tcp";
  if (c.tcp->path_bits > 0) f.numbers["link_ratio"] = c.tcp->ratio;
  return true;
}

// No link or interface speed to hold TCP against, and no window, buffer or
// CPU limit: the link may be at its ceiling, or TCP or a CPU short of one.
bool tcp_link_unknown(const Case& c, Finding& f) {
  if (c.tcp->path_bits > 0) return false;
  undecided_unexplained(f, {"network", "tcp", "cpu"});
  return true;
}

// Beyond the nominal speed (a virtual link): that speed is no ceiling, and no
// window, buffer or CPU limit shows; what holds it (the kernel's work spread
// over cores, TCP's own congestion control) chokepoint cannot see.
bool tcp_above_link(const Case& c, Finding& f) {
  if (!c.tcp->above_link) return false;
  undecided_unexplained(f, {"tcp", "cpu"});
  f.numbers["fastest_ratio"] = c.tcp->t.rate.max * 8 / c.tcp->path_bits;
  return true;
}

// Near the link's rate while every core was busy (the endpoint's own work, or
// other jobs') and its samples swing: the CPU may hold it there as well as the
// link, which holds one rate.
bool tcp_busy_near_link(const Case& c, Finding& f) {
  const Row& t = c.tcp->t;
  const bool busy = t.cpu_bound.kind == "all cores" || t.competing_load_pct > 0;
  if (!(c.tcp->ratio >= kShortTcp && busy && !c.tcp->steady)) return false;
  undecided_by_load(f, {"network", "cpu"});
  f.numbers["link_ratio"] = c.tcp->ratio;
  f.cpu_weighed = t.cpu_bound;
  if (t.cpu_bound.empty()) f.numbers["competing_load_pct"] = t.competing_load_pct;
  return true;
}

bool tcp_at_link(const Case& c, Finding& f) {
  if (c.tcp->ratio < kShortTcp) return false;
  f.layer = "network";
  f.numbers["link_ratio"] = c.tcp->ratio;
  return true;
}

// Short of the link while other processes kept every core busy: the load alone
// may have held it back, unless the samples hold one rate as a slower link or
// a shaper does (a CPU shared with other jobs swings with their load).
bool tcp_load(const Case& c, Finding& f) {
  const Row& t = c.tcp->t;
  if (!(t.competing_load_pct > 0 && !c.tcp->steady)) return false;
  undecided_by_load(f, {"network path", "cpu"});
  f.numbers["link_ratio"] = c.tcp->ratio;
  f.numbers["competing_load_pct"] = t.competing_load_pct;
  if (!t.competing_process.empty()) f.words["competing_process"] = t.competing_process;
  return true;
}

// Below both ends' interfaces with no window, buffer or CPU limit: something on
// the path between them (a slower switch port, Wi-Fi, a VPN, a shaper).
bool tcp_path(const Case& c, Finding& f) {
  const Row& t = c.tcp->t;
  f.layer = "network path";
  f.numbers["link_ratio"] = c.tcp->ratio;
  // The round trip grows under load: a queue on the path.
  if (t.rtt_idle_us > 0 && t.rtt_us > 1.5 * t.rtt_idle_us) f.words["queue"] = "rtt";
  return true;
}

}  // namespace rules

Finding explain_tcp(const Row& t, const Analysis& a) {
  const TcpCase tc = tcp_case(t, a);
  Finding f;
  tcp_evidence(tc, a, f);
  const bool judged = run_chain(kTcpChain, Case{a, &tc}, f);
  CP_CHECK(judged);  // tcp.path applies to every row the others leave
  if (f.layer != "undecided") f.cap = tcp_cap_key(a, t, f.layer);
  if (std::optional<Hint> h = mtu_hint(a)) f.hints.push_back(*h);
  if (f.rule == "tcp.window") {
    for (const auto& h : tc.buffers) f.hints.push_back(h);
  }
  return f;
}

void adopt_tcp_explanation(const Row& t, const Analysis& a, Finding& f) {
  adopt_verdict(explain_tcp(t, a), f);
}

void adopt_verdict(Finding e, Finding& f) {
  static_cast<FindingVerdict&>(f) = e;
  f.because.push_back(std::move(e));
}

}  // namespace cp::analysis
