// CPU evidence: who burns the CPU over a row's samples, and whether it caps
// the row.
#include <algorithm>
#include <string>

#include "analysis/judge.h"

namespace cp::analysis {
namespace {

bool own_role(const std::string& role) {
  // "" is an older agent's record: the role was not told, so it may be the endpoint's.
  return role == "server" || role == "agent" || role == "kernel" || role.empty();
}

// The CPU an end's own work wanted: what it used (agent, file server, kernel)
// plus the time its agent and file server threads waited for a core, % of a core.
double own_demand_pct(const CpuUse& u) {
  return u.agent_pct + u.server_pct + u.kernel_pct + u.own_wait_pct;
}

// Competing load seen from one end: other processes' CPU (% of a core) and the
// busiest of them. When both ends share one machine, each sees the other end's
// agent (the client's probe) as another process: it is the endpoints' work, not
// competing load, so its CPU is taken off and it is not named. (File servers
// are known by name on either end: never counted as other processes.)
struct Competing {
  double pct = 0;
  const CpuProc* proc = nullptr;
};
Competing competing_of(const Row& r, const Analysis& a, const std::string& host) {
  Competing c;
  auto it = r.cpu.find(host);
  if (it == r.cpu.end()) return c;
  const CpuUse& u = it->second;
  c.pct = u.other_pct;
  const CpuUse* peer = nullptr;
  if (a.same_machine) {
    auto p = r.cpu.find(host == "server" ? "client" : "server");
    if (p != r.cpu.end() && p->second.seconds > 0) peer = &p->second;
  }
  if (peer) c.pct = std::max(0.0, c.pct - peer->agent_pct);
  auto peers_own = [&](const CpuProc& q) {
    if (!peer || !q.other_netns) return false;
    for (const auto& o : peer->procs)
      if (o.comm == q.comm && !o.other_netns && o.role == "agent") return true;
    return false;
  };
  for (const auto& q : u.procs) {  // busiest first
    if (q.role == "other" && !peers_own(q)) {
      c.proc = &q;
      break;
    }
  }
  return c;
}

// Why `r` is CPU-bound, from its ends' CPU over all of its samples; empty
// when it is not. A process at its cgroup quota first (the most specific), then
// one of the endpoint's threads at a core, then every core busy. Processes in
// another network namespace than the end's agent are not that end's (a lab's
// other host, a container): they count as competing load only.
CpuBound find_cpu_bound(const Row& r, const Analysis& a) {
  CpuBound best;
  std::string view;  // the end whose figures name the CPU
  auto eligible = [](const CpuUse& u) { return u.seconds >= kMinCpuWindow; };
  for (const char* host : {"server", "client"}) {
    auto it = r.cpu.find(host);
    if (it == r.cpu.end() || !eligible(it->second)) continue;
    for (const auto& p : it->second.procs) {
      if (p.other_netns || !own_role(p.role) || p.limit_pct <= 0) continue;
      const bool at_limit = p.cpu_pct >= kQuotaSaturated * p.limit_pct;
      const bool throttled =
          p.throttled_pct >= kThrottledPeriods && p.cpu_pct >= kThrottledUse * p.limit_pct;
      if (!at_limit && !throttled) continue;
      best = {host, "quota", p.comm, p.role, p.cpu_pct, p.limit_pct, false, 0, false};
      break;
    }
    if (!best.empty()) break;
  }
  if (best.empty()) {
    // The file server's thread before chokepoint's own: the server is what users ask about.
    for (const char* role : {"server", "kernel", "agent", ""}) {
      for (const char* host : {"server", "client"}) {
        auto it = r.cpu.find(host);
        if (it == r.cpu.end() || !eligible(it->second)) continue;
        for (const auto& p : it->second.procs) {
          if (p.other_netns || p.role != role || p.top_thread_pct < kThreadSaturated) continue;
          best = {host, "thread", p.comm, p.role, p.top_thread_pct, 0, false, 0, false};
          break;
        }
        if (!best.empty()) break;
      }
      if (!best.empty()) break;
    }
  }
  if (best.empty()) {
    for (const char* host : {"server", "client"}) {
      auto it = r.cpu.find(host);
      if (it == r.cpu.end() || !eligible(it->second)) continue;
      const CpuUse& u = it->second;
      if (u.total_busy_pct < kAllCoresBusy) continue;
      // Busy cores cap this row only when its own work wants the CPU: running or
      // runnable but waiting for a core (what competing load takes from it) for
      // at least half a core. A disk held by a throttle neither runs nor waits.
      if (own_demand_pct(u) < kOwnBusy) continue;
      best.host = a.same_machine ? "both" : host;
      view = host;
      best.kind = "all cores";
      best.pct = u.total_busy_pct;
      // Who burns it: the competing process when other jobs hold most of the
      // busy CPU, else the busiest process.
      const Competing c = competing_of(r, a, host);
      const double own = u.agent_pct + u.server_pct + u.kernel_pct;
      const CpuProc* who = c.pct > own && c.proc ? c.proc
                           : u.procs.empty()     ? nullptr
                                                 : &u.procs.front();
      if (who) {
        best.process = who->comm;
        best.role = who->role;
        best.other_netns = who->other_netns;
      }
      break;
    }
  }
  if (best.empty()) return best;
  best.same_machine = a.same_machine;
  // The end whose figures found it (on one machine, "both" is either end's view).
  if (view.empty()) view = best.host == "client" ? "client" : "server";
  if (auto it = r.cpu.find(view); it != r.cpu.end()) {
    const CpuUse& u = it->second;
    best.competing_pct = competing_of(r, a, view).pct;
    best.per_packet =
        u.total_busy_pct > 0 && (u.sys_pct + u.softirq_pct) >= kPerPacketShare * u.total_busy_pct;
  }
  return best;
}

}  // namespace

// Whether `r`'s CPU evidence caps it. One of the endpoint's processes at its
// quota or a thread at a core caps it outright; every core busy does not
// override a row that already reaches its layer beneath (`at_ceiling`: a TCP at
// the link's rate, a protocol at TCP's or the disk's): that layer holds it,
// busy or not.
bool cpu_caps(const Row& r, bool at_ceiling) {
  return !r.cpu_bound.empty() && !(r.cpu_bound.kind == "all cores" && at_ceiling);
}

void set_cpu(Finding& f, const Row& r, const Analysis& a) {
  f.layer = "cpu";
  f.cpu = r.cpu_bound;
  f.cap = r.key;
  if (r.cpu_bound.role == "agent") f.lower_bound = true;
  // Per-packet cost at the standard MTU: what jumbo frames cut (seed 004).
  // Not for a quota: the cap is the quota, whatever each packet costs.
  if (r.cpu_bound.per_packet && r.cpu_bound.kind != "quota" && a.server_mtu == 1500 &&
      a.client_mtu == 1500 && (r.layer == "tcp" || is_protocol(r.layer))) {
    f.hints.push_back(Hint{"cpu.jumbo_frames", {}, {}});
  }
}

void judge_cpu_evidence(Analysis& a) {
  for (auto& r : a.rows) {
    r.cpu_bound = find_cpu_bound(r, a);
    // Every core busy, mostly with other processes: measured under competing load.
    for (const auto& [host, u] : r.cpu) {
      const Competing c = competing_of(r, a, host);
      if (!r.cpu_bound.empty() || u.seconds < kMinCpuWindow || u.total_busy_pct < kAllCoresBusy ||
          c.pct <= r.competing_load_pct) {
        continue;
      }
      r.competing_load_pct = c.pct;
      r.competing_process = c.proc ? c.proc->comm : "";
    }
  }
}

}  // namespace cp::analysis
