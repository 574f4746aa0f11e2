#include "analysis/ladder.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/bootstrap.h"
#include "core/cpu_message.h"
#include "core/facts_message_json.h"
#include "core/json_util.h"
#include "core/messages_json.h"
#include "core/units.h"

namespace cp::analysis {
namespace {

namespace json = boost::json;

const json::value* path(const json::object& o, std::initializer_list<const char*> keys) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (const char* k : keys) {
    if (!cur) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    v = &it->value();
    cur = v->is_object() ? &v->as_object() : nullptr;
  }
  return v;
}

double number(const json::value* v, double fallback = 0) {
  if (!v) return fallback;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return double(v->as_int64());
  if (v->is_uint64()) return double(v->as_uint64());
  return fallback;
}

std::string pct(double ratio) { return fmt::format("{:.0f} %", ratio * 100); }

std::string mbps(double bps) { return format_mbps(bps); }

std::string where_label(const std::string& where) {
  if (where == "server->client") return "server -> client";
  if (where == "client->server") return "client -> server";
  return where;
}

// Folds one sample's CPU summaries ({"server":{...},"client":{...}}) into the row.
void add_cpu(Row& row, const json::object& cpu) {
  for (const auto& [host, v] : cpu) {
    if (!v.is_object()) continue;
    const msg::CpuSummary c = msg::cpu_summary_from_json(v);
    // Busy fractions over a few milliseconds are noise (one 0.25 s tick);
    // only windows of at least half a second count as evidence.
    if (c.seconds < kMinCpuWindow) continue;
    for (const msg::ProcLoad& p : c.top) {
      const double used = p.cpu_pct;
      const double limit = p.cpu_limit_pct;
      if (limit <= 0 || used < kQuotaSaturated * limit) continue;
      const bool foreign = p.other_netns;
      const bool better = row.quota_host.empty() || (row.quota_other_netns && !foreign) ||
                          (row.quota_other_netns == foreign &&
                           used / limit > row.quota_cpu_pct / row.quota_limit_pct);
      if (!better) continue;
      row.quota_host = host;
      row.quota_process = p.comm;
      row.quota_cpu_pct = used;
      row.quota_limit_pct = limit;
      row.quota_other_netns = foreign;
    }
    for (const double busy : c.core_busy_pct) {
      if (busy > row.max_core_pct) {
        row.max_core_pct = busy;
        row.max_core_host = host;
        row.max_core_process.clear();
        if (!c.top.empty()) {
          row.max_core_process = fmt::format("{} at {:.0f} %", c.top[0].comm, c.top[0].cpu_pct);
        }
      }
    }
  }
}

// "smb" -> "SMB"; the path driver measures whatever is mounted.
std::string protocol_name(const std::string& layer) {
  if (layer == "path") return "mounted path";
  std::string up = layer;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up;
}

bool is_protocol(const std::string& layer) {
  return layer != "disk" && layer != "tcp" && layer != "link";
}

// A protocol row of the ladder proper (not a sweep cell).
bool is_protocol_row(const Row& r) { return is_protocol(r.layer) && !is_sweep(r); }

// One end's CPU messages over a row's samples, weighted by their windows.
struct CpuAcc {
  double w = 0, total = 0, sys = 0, soft = 0, agent = 0, server = 0, kernel = 0, other = 0,
         wait = 0;
  struct Proc {
    double cpu = 0, thread = 0, limit = 0, throttled = 0, throttled_w = 0;
    bool thread_known = false;
  };
  std::map<std::tuple<std::string, std::string, bool>, Proc> procs;  // comm, role, other netns

  void add(const msg::CpuSummary& s) {
    const double sw = s.seconds;
    if (sw <= 0) return;
    w += sw;
    total += s.total_busy_pct * sw;
    sys += s.sys_pct * sw;
    soft += s.softirq_pct * sw;
    agent += s.agent_pct * sw;
    server += s.server_pct * sw;
    kernel += s.kernel_pct * sw;
    other += s.other_pct * sw;
    wait += s.own_wait_pct * sw;
    for (const auto& p : s.top) {
      Proc& acc = procs[{p.comm, p.role, p.other_netns}];
      acc.cpu += p.cpu_pct * sw;
      if (p.top_thread_pct >= 0) {
        acc.thread += p.top_thread_pct * sw;
        acc.thread_known = true;
      }
      acc.limit = std::max(acc.limit, p.cpu_limit_pct);
      if (p.throttled_pct >= 0) {
        acc.throttled += p.throttled_pct * sw;
        acc.throttled_w += sw;
      }
    }
  }
  CpuUse use() const {
    CpuUse u;
    u.seconds = w;
    if (w <= 0) return u;
    u.total_busy_pct = total / w;
    u.sys_pct = sys / w;
    u.softirq_pct = soft / w;
    u.agent_pct = agent / w;
    u.server_pct = server / w;
    u.kernel_pct = kernel / w;
    u.other_pct = other / w;
    u.own_wait_pct = wait / w;
    for (const auto& [key, p] : procs) {
      CpuProc c;
      std::tie(c.comm, c.role, c.other_netns) = key;
      // A process missing from a sample's list was too idle to be listed: 0 there.
      c.cpu_pct = p.cpu / w;
      c.top_thread_pct = p.thread_known ? p.thread / w : -1;
      c.limit_pct = p.limit;
      c.throttled_pct = p.throttled_w > 0 ? p.throttled / p.throttled_w : -1;
      u.procs.push_back(std::move(c));
    }
    std::sort(u.procs.begin(), u.procs.end(),
              [](const CpuProc& a, const CpuProc& b) { return a.cpu_pct > b.cpu_pct; });
    return u;
  }
};

struct Accum {
  Row row;
  double busy_s = 0, rwnd_s = 0, sndbuf_s = 0;
  bool info = false;
  std::vector<double> rtts, idle_rtts;  // µs
  std::map<std::string, CpuAcc> cpu;    // per end
};

}  // namespace

bool is_sweep(const Row& r) { return r.op.rfind("sweep-", 0) == 0; }

const Row* find_row(const Analysis& a, const std::string& key) {
  for (const auto& r : a.rows)
    if (r.key == key) return &r;
  return nullptr;
}

const HostFacts& host_facts(const Analysis& a, const std::string& role) {
  return role == "client" ? a.client : a.server;
}

uint64_t max_of_sysctl(const std::string& text) {
  uint64_t best = 0, cur = 0;
  bool in_number = false;
  for (char c : text + " ") {
    if (c >= '0' && c <= '9') {
      cur = cur * 10 + static_cast<uint64_t>(c - '0');
      in_number = true;
    } else {
      if (in_number) best = std::max(best, cur);
      cur = 0;
      in_number = false;
    }
  }
  return best;
}

namespace {

// What the rules cite of one host's stored facts.
HostFacts read_host_facts(const msg::Facts& f) {
  HostFacts h;
  h.hostname = f.hostname.value_or("");
  h.boot_id = f.boot_id.value_or("");
  h.memory_bytes = f.memory_bytes.value_or(0);
  if (f.net) {
    h.nic_name = f.net->name.value_or("");
    h.mtu = static_cast<int>(f.net->mtu.value_or(0));
    h.nic_bits = static_cast<double>(f.net->speed_mbit.value_or(0)) * 1e6;
    h.shaped_bits = static_cast<double>(f.net->shaped_rate_bit.value_or(0));
  }
  if (f.ram_dir) h.ram_fs = f.ram_dir->fs_type.value_or("");
  if (f.disk_dir) h.disk_fs = f.disk_dir->fs_type.value_or("");
  if (f.disk_dir && f.disk_dir->device) {
    h.disk_device = f.disk_dir->device->disk;
    h.read_ahead_kb = f.disk_dir->device->read_ahead_kb.value_or(-1);
  }
  for (const msg::NamedValue& v : f.tcp_sysctls) {
    if (v.value) h.tcp_sysctls[v.name] = *v.value;
  }
  // A config that could not be read tells no parameter.
  h.samba_known = f.samba && f.samba->error.empty();
  if (h.samba_known) {
    for (const msg::NamedValue& v : f.samba->global) {
      if (v.value) h.samba[v.name] = *v.value;
    }
  }
  return h;
}

void detect_link(const RunRecord& run, Analysis& a) {
  json::object plan = parse_json_object(run.plan_json);
  double planned = number(path(plan, {"link", "nominal_bits"}));
  if (planned > 0) {
    a.link_bits = planned;
    a.link_source = "set in the plan";
  }
  for (const auto& h : run.hosts) {
    const HostFacts facts = read_host_facts(msg::read_stored<msg::Facts>(h.facts_json));
    (h.role == "server" ? a.server_mtu : a.client_mtu) = facts.mtu;
    (h.role == "server" ? a.server : a.client) = facts;
    a.same_machine = !a.server.boot_id.empty() && a.server.boot_id == a.client.boot_id;
    if (planned > 0) continue;
    const std::string ifname = facts.nic_name;
    double shaped = facts.shaped_bits;
    double speed = facts.nic_bits;
    double bits = shaped > 0 ? shaped : speed;
    if (bits <= 0) continue;
    if (a.link_bits == 0 || bits < a.link_bits) {
      a.link_bits = bits;
      a.link_source = shaped > 0 ? fmt::format("tc rate on {} ({})", ifname, h.role)
                                 : fmt::format("link speed of {} ({})", ifname, h.role);
    }
  }
}

const Row* disk_row(const std::vector<Row>& rows, const std::string& where, const std::string& op,
                    uint64_t size = 0);
const Row* tcp_row(const std::vector<Row>& rows, const std::string& where);

// The row of `layer` over `medium` for `op` with files of `size`, else the
// nearest size (by ratio); size 0: the biggest files.
const Row* proto_row(const std::vector<Row>& rows, const std::string& layer,
                     const std::string& medium, const std::string& op, uint64_t size = 0) {
  const Row* best = nullptr;
  auto distance = [&](const Row& r) {
    return size == 0 ? -double(r.size) : std::fabs(std::log(double(r.size) / double(size)));
  };
  for (const auto& r : rows) {
    if (r.layer == layer && r.where == medium && r.op == op && r.rate.n > 0 && r.size > 0 &&
        (!best || distance(r) < distance(*best))) {
      best = &r;
    }
  }
  return best;
}

// A protocol over RAM is held against TCP in its direction; over disk,
// against the lower of the same protocol over RAM and the server's disk, at
// the same file size (or the nearest one measured).
const Row* beneath_protocol(const std::vector<Row>& rows, const Row& r) {
  const bool read = r.op == "read";
  if (r.where == "ram") return tcp_row(rows, read ? "server->client" : "client->server");
  const Row* ram = proto_row(rows, r.layer, "ram", r.op, r.size);
  const Row* disk = disk_row(rows, "server", r.op, r.size);
  if (ram && disk) return ram->rate.median <= disk->rate.median ? ram : disk;
  return ram ? ram : disk;
}

void link_protocol_rows(std::vector<Row>& rows) {
  for (auto& r : rows) {
    if (!is_protocol_row(r) || r.rate.n == 0) continue;
    if (const Row* b = beneath_protocol(rows, r); b && b->rate.median > 0) {
      const RatioInterval ri = bootstrap_median_ratio(r.samples, b->samples);
      r.below = b->key;
      r.ratio = ri.ratio;
      r.ratio_lo = ri.lo;
      r.ratio_hi = ri.hi;
      if (b->size > 0 && b->size != r.size) r.below_size = b->size;
    }
  }
}

std::vector<Row> build_rows(const RunRecord& run, const Analysis& a) {
  std::map<std::string, Accum> acc;
  std::vector<std::string> order;
  for (const auto& st : run.stages) {
    for (const auto& s : st.samples) {
      std::string key;
      Row proto;
      proto.layer = st.layer;
      proto.where = st.where;
      proto.op = s.op;
      if (st.layer == "disk") {
        key = fmt::format("disk:{}:{}:{}", st.where, s.op, s.size);
        proto.size = s.size;
        proto.label = fmt::format("{} disk {}, {} files", st.where, s.op, format_size(s.size));
      } else if (st.layer == "tcp") {
        key = fmt::format("tcp:{}:{}", st.where, s.op);
        proto.label = "TCP " + where_label(st.where);
        proto.below = "link";
      } else {
        // A protocol over a RAM or disk share.
        key = fmt::format("{}:{}:{}:{}", st.layer, st.where, s.op, s.size);
        proto.size = s.size;
        if (s.op.rfind("sweep-", 0) == 0) {
          proto.label = fmt::format("{} {} {}, {} requests", protocol_name(st.layer),
                                    st.where == "ram" ? "from RAM" : "from disk", s.op.substr(6),
                                    format_size(s.size));
        } else {
          proto.label = fmt::format("{} {} {}, {} files", protocol_name(st.layer),
                                    st.where == "ram" ? "from RAM" : "from disk",
                                    s.op == "read" ? "read" : "write", format_size(s.size));
        }
      }
      auto [it, inserted] = acc.try_emplace(key);
      Accum& ac = it->second;
      if (inserted) {
        order.push_back(key);
        ac.row = proto;
        ac.row.key = key;
      }
      if (!s.error.empty()) {
        ac.row.failed++;
        continue;
      }
      ac.row.samples.push_back(s.rate());
      ac.row.sample_ids.push_back(s.id);
      // The agent's reason for the row's first sample a cache may have served.
      const bool want_why = s.cache_possible && ac.row.cache_possible_why.empty();
      if (s.cache_possible) ac.row.cache_possible++;
      if (want_why && st.layer == "disk") {
        ac.row.cache_possible_why = msg::read_stored<msg::DiskDetails>(s.details_json).cache_reason;
      }
      const json::object cpu = parse_json_object(s.cpu_json);
      add_cpu(ac.row, cpu);
      for (const auto& [host, v] : cpu) {
        ac.cpu[std::string(host)].add(msg::cpu_summary_from_json(v));
      }
      // Protocol samples' details, read once: the driver's properties and the
      // share's filesystem from the first, a cache reason where one is wanted.
      if (is_protocol(st.layer) && (ac.row.properties.empty() || want_why)) {
        msg::TransferDetails td = msg::read_stored<msg::TransferDetails>(s.details_json);
        if (want_why) ac.row.cache_possible_why = td.cache_reason;
        if (ac.row.properties.empty()) {
          ac.row.properties = std::move(td.properties);
          ac.row.server_fs = td.server_fs;
          ac.row.server_disk = td.server_disk;
        }
      }
      if (st.layer == "tcp") {
        const msg::TcpInfo t = msg::read_stored<msg::TcpDetails>(s.details_json).tcp_info;
        if (t.available) {
          ac.info = true;
          ac.busy_s += t.busy_s;
          ac.rwnd_s += t.rwnd_limited_s;
          ac.sndbuf_s += t.sndbuf_limited_s;
          ac.row.retransmits += t.retransmits;
          if (t.rtt_us > 0) ac.rtts.push_back(double(t.rtt_us));
          if (t.rtt_idle_us > 0) ac.idle_rtts.push_back(double(t.rtt_idle_us));
        }
      }
    }
  }
  std::vector<Row> rows;
  if (a.link_bits > 0) {
    Row link;
    link.key = "link";
    link.layer = "link";
    link.label = "link (nominal, " + a.link_source + ")";
    link.rate.median = link.rate.min = link.rate.max = a.link_bits / 8;
    rows.push_back(link);
  }
  for (const auto& key : order) {
    Accum& ac = acc[key];
    ac.row.rate = summarize(ac.row.samples);
    if (!ac.rtts.empty()) ac.row.rtt_us = summarize(ac.rtts).median;
    if (!ac.idle_rtts.empty()) ac.row.rtt_idle_us = summarize(ac.idle_rtts).median;
    for (const auto& [host, c] : ac.cpu) ac.row.cpu[host] = c.use();
    if (ac.info && ac.busy_s > 0) {
      ac.row.rwnd_limited_frac = std::min(1.0, ac.rwnd_s / ac.busy_s);
      ac.row.sndbuf_limited_frac = std::min(1.0, ac.sndbuf_s / ac.busy_s);
    }
    if (ac.row.below == "link" && a.link_bits > 0 && ac.row.rate.n > 0) {
      const RatioInterval ri = bootstrap_median_ratio(ac.row.samples, {a.link_bits / 8});
      ac.row.ratio = ri.ratio;
      ac.row.ratio_lo = ri.lo;
      ac.row.ratio_hi = ri.hi;
    } else {
      ac.row.below.clear();
    }
    rows.push_back(ac.row);
  }
  link_protocol_rows(rows);
  return rows;
}

// The disk row of `where`/`op` with files of `size`, else the nearest size;
// size 0: the biggest files (the sustained figure).
const Row* disk_row(const std::vector<Row>& rows, const std::string& where, const std::string& op,
                    uint64_t size) {
  const Row* best = nullptr;
  auto distance = [&](const Row& r) {
    return size == 0 ? -double(r.size) : std::fabs(std::log(double(r.size) / double(size)));
  };
  for (const auto& r : rows) {
    if (r.layer == "disk" && r.where == where && r.op == op && r.rate.n > 0 && r.size > 0 &&
        (!best || distance(r) < distance(*best))) {
      best = &r;
    }
  }
  return best;
}

const Row* tcp_row(const std::vector<Row>& rows, const std::string& where) {
  for (const auto& r : rows)
    if (r.layer == "tcp" && r.where == where && r.rate.n > 0) return &r;
  return nullptr;
}

// ---------------------------------------------------------------------------
// CPU: who burns it, over a row's samples.

bool own_role(const std::string& role) {
  // "" is an older agent's record: the role was not told, so it may be the endpoint's.
  return role == "server" || role == "agent" || role == "kernel" || role.empty();
}

std::string describe_proc(const std::string& comm, const std::string& role) {
  if (role == "agent") return "chokepoint's own " + (comm.empty() ? "agent" : comm);
  return comm.empty() ? "a process" : comm;
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

// "the server's CPU: smbd, one thread at 98 % of a core", "CPU quota of smbd on
// the server (10 % of a core; it used 11 %)", "all cores busy on the machine
// both ends share (94 %; busiest: smbd; competing load 40 % of a core)".
std::string cpu_text(const CpuBound& c, const Analysis& a) {
  std::string s;
  const std::string who = describe_proc(c.process, c.role);
  if (c.kind == "turns") {
    return fmt::format(
        "one request in flight: client and server threads take turns ({:.0f} % "
        "of a core together)",
        c.pct);
  }
  if (c.kind == "quota") {
    s = fmt::format("the CPU quota of {} on the {} ({:.0f} % of a core; it used {:.0f} %)", who,
                    c.host, c.limit_pct, c.pct);
  } else if (c.kind == "thread") {
    s = fmt::format("the {}'s CPU: {}, one thread at {:.0f} % of a core", c.host, who, c.pct);
  } else if (c.host == "both") {
    s = fmt::format("all cores busy on the one machine both ends share ({:.0f} %{})", c.pct,
                    c.process.empty() ? "" : "; busiest: " + describe_proc(c.process, c.role));
  } else {
    s = fmt::format("all cores of the {} busy ({:.0f} %{})", c.host, c.pct,
                    c.process.empty() ? "" : "; busiest: " + describe_proc(c.process, c.role));
  }
  if (c.competing_pct >= 10) {
    s += fmt::format("; competing load (processes not the endpoints') {:.0f} % of a core",
                     c.competing_pct);
  }
  if (c.role == "agent") {
    s += ": chokepoint's own probe is the limit, so the figure is a lower bound of what the "
         "layer can do";
  }
  if (a.same_machine && c.host != "both") s += " (both ends share one machine's CPUs)";
  return s;
}

// Whether `r`'s CPU evidence caps it. One of the endpoint's processes at its
// quota or a thread at a core caps it outright; every core busy does not
// override a row that already reaches its layer beneath (`at_ceiling`: a TCP at
// the link's rate, a protocol at TCP's or the disk's): that layer holds it,
// busy or not.
bool cpu_caps(const Row& r, bool at_ceiling) {
  return !r.cpu_bound.empty() && !(r.cpu_bound.kind == "all cores" && at_ceiling);
}

// ---------------------------------------------------------------------------
// Noise: is a layer below, at, or above the layer beneath?

enum class Level { kBelow, kNoise, kCeiling, kFaster };

// `r` against the row beneath it (its ratio and interval).
Level level_of(double ratio, double lo, double hi, double median, const Row& beneath) {
  if (ratio > kFasterThanBeneath) {
    if (lo > 1 && median > beneath.rate.max) return Level::kFaster;
    return lo >= kAtCeiling ? Level::kCeiling : Level::kNoise;
  }
  if (ratio >= kAtCeiling) return Level::kCeiling;
  return hi >= kAtCeiling ? Level::kNoise : Level::kBelow;
}

Level level_of(const Row& r, const Row& beneath) {
  return level_of(r.ratio, r.ratio_lo, r.ratio_hi, r.rate.median, beneath);
}

// Samples per row that would likely narrow the interval enough to decide.
int suggested_count(const Row& r) {
  const size_t n = std::max<size_t>(r.rate.n, 1);
  const double half = (r.ratio_hi - r.ratio_lo) / 2;
  const double margin = std::max(0.02, std::fabs(r.ratio - (r.ratio > 1 ? 1.0 : kAtCeiling)));
  const double want = std::ceil(double(n) * (half / margin) * (half / margin));
  return static_cast<int>(std::clamp(want, double(n + 5), 100.0));
}

Finding make_finding(std::string path, std::string layer, std::string text,
                     std::vector<std::string> rows = {}, std::string cap = {}) {
  Finding f;
  f.path = std::move(path);
  f.layer = std::move(layer);
  f.text = std::move(text);
  f.rows = std::move(rows);
  f.cap = std::move(cap);
  return f;
}

// Adds a tuning hint to the finding's text and list.
void add_hint(Finding& f, std::string hint) {
  f.text += "; " + hint;
  f.hints.push_back(std::move(hint));
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
    add_hint(f, fmt::format("kernel work is {} of the busy CPU at MTU 1500 on both ends: jumbo "
                            "frames (MTU 9000 on both ends and every switch between) cut the "
                            "per-packet cost",
                            "most"));
  }
}

// ---------------------------------------------------------------------------
// TCP.

struct TcpExplanation {
  // "cpu" | "network" | "network path" | "tcp" | "undecided" (other jobs' load
  // may explain it: `candidates`)
  std::string layer;
  std::string text;
  std::vector<std::string> hints;
  std::vector<std::string> candidates = {};
};

// Sets a finding's layer and, when undecided, why, from a TCP explanation.
void set_tcp_layer(Finding& f, const TcpExplanation& e) {
  f.layer = e.layer;
  if (e.layer != "undecided") return;
  f.candidates = e.candidates;
  f.undecided_reason = "load";
}

std::string sysctl_of(const HostFacts& h, const char* key) {
  auto it = h.tcp_sysctls.find(key);
  return it == h.tcp_sysctls.end() ? std::string() : it->second;
}

// Buffer hints for a TCP that a window or buffer limits, each citing its trigger.
std::vector<std::string> buffer_hints(const Row& t, const Analysis& a, double path_bits) {
  std::vector<std::string> hints;
  const bool down = t.where == "server->client";
  const std::string sender = down ? "server" : "client", receiver = down ? "client" : "server";
  const HostFacts& rf = host_facts(a, receiver);
  const HostFacts& sf = host_facts(a, sender);
  // The window needed to fill the path: bandwidth x round-trip time.
  const double bdp = path_bits > 0 && t.rtt_us > 0 ? path_bits / 8 * t.rtt_us / 1e6 : 0;
  const uint64_t rmem = max_of_sysctl(sysctl_of(rf, "net.ipv4.tcp_rmem"));
  const bool rmem_short = bdp > 0 && rmem > 0 && double(rmem) < bdp;
  if (t.rwnd_limited_frac > kWindowLimited || rmem_short) {
    std::string why =
        t.rwnd_limited_frac > kWindowLimited
            ? fmt::format("receive-window-limited {}", pct(t.rwnd_limited_frac))
            : fmt::format(
                  "the {}'s tcp_rmem max {} bytes is below the bandwidth-delay product {} bytes "
                  "({} x {:.2f} ms RTT)",
                  receiver, rmem, static_cast<uint64_t>(bdp), format_rate_bits(path_bits),
                  t.rtt_us / 1000);
    std::string now;
    if (!sysctl_of(rf, "net.ipv4.tcp_rmem").empty()) {
      now = fmt::format(" (now net.ipv4.tcp_rmem = \"{}\", net.core.rmem_max = {})",
                        sysctl_of(rf, "net.ipv4.tcp_rmem"), sysctl_of(rf, "net.core.rmem_max"));
    }
    hints.push_back(fmt::format("{}: raise the {}'s receive buffer max{}", why, receiver, now));
  }
  if (t.sndbuf_limited_frac > kWindowLimited) {
    std::string now;
    if (!sysctl_of(sf, "net.ipv4.tcp_wmem").empty()) {
      now = fmt::format(" (now net.ipv4.tcp_wmem = \"{}\", net.core.wmem_max = {})",
                        sysctl_of(sf, "net.ipv4.tcp_wmem"), sysctl_of(sf, "net.core.wmem_max"));
    }
    hints.push_back(fmt::format("send-buffer-limited {}: raise the {}'s send buffer max{}",
                                pct(t.sndbuf_limited_frac), sender, now));
  }
  return hints;
}

std::string mtu_hint(const Analysis& a) {
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    return fmt::format(
        "MTU {} on the server but {} on the client: set the same MTU on both ends and every "
        "switch between them",
        a.server_mtu, a.client_mtu);
  }
  return {};
}

// The slower of both ends' interface speeds, bit/s (0: neither known), and its text.
double nic_bits(const Analysis& a, std::string* text) {
  double bits = 0;
  std::vector<std::string> parts;
  for (const char* role : {"server", "client"}) {
    const HostFacts& h = host_facts(a, role);
    if (h.nic_bits <= 0) continue;
    parts.push_back(fmt::format("{} NIC {}", role, format_rate_bits(h.nic_bits)));
    bits = bits == 0 ? h.nic_bits : std::min(bits, h.nic_bits);
  }
  for (size_t i = 0; i < parts.size(); ++i) *text += (i ? ", " : "") + parts[i];
  return bits;
}

// Why TCP is where it is, with the numbers.
TcpExplanation explain_tcp(const Row& t, const Analysis& a) {
  std::vector<std::string> why;
  if (t.rwnd_limited_frac > kWindowLimited) {
    why.push_back(fmt::format("receive-window-limited {} of the time", pct(t.rwnd_limited_frac)));
  }
  if (t.sndbuf_limited_frac > kWindowLimited) {
    why.push_back(fmt::format("send-buffer-limited {} of the time", pct(t.sndbuf_limited_frac)));
  }
  if (t.retransmits > 0) why.push_back(fmt::format("{} retransmits", t.retransmits));
  if (t.rtt_idle_us > 0 && t.rtt_us > 0) {
    why.push_back(fmt::format("RTT {:.2f} ms idle, {:.2f} ms under load", t.rtt_idle_us / 1000,
                              t.rtt_us / 1000));
  }
  std::string because;
  for (size_t i = 0; i < why.size(); ++i) because += (i ? "; " : "") + why[i];
  auto with_because = [&](std::string s) { return because.empty() ? s : s + "; " + because; };
  std::vector<std::string> hints;
  if (std::string h = mtu_hint(a); !h.empty()) hints.push_back(h);

  // The path's expected rate: the plan's or a shaper's nominal link, else the NICs.
  std::string nics;
  const double nic = nic_bits(a, &nics);
  const bool nominal = a.link_source == "set in the plan" ||
                       host_facts(a, "server").shaped_bits > 0 ||
                       host_facts(a, "client").shaped_bits > 0;
  const double path_bits = nominal ? a.link_bits : nic;
  // Every core busy does not take a TCP already at the link's rate.
  // A sample beyond the nominal speed shows it is no ceiling (a virtual link),
  // whatever the median: a link or a shaper is never exceeded.
  const double link_ratio = path_bits > 0 ? t.rate.median * 8 / path_bits : 0;
  const bool above_link = path_bits > 0 && t.rate.max * 8 / path_bits > kAboveLink;
  const bool at_link = link_ratio >= kShortTcp && !above_link;
  // The samples hold one rate, as a slower link or a shaper does; a CPU shared
  // with other jobs swings with their load.
  const bool steady = t.rate.n >= kSteadySamples && t.rate.median > 0 &&
                      (t.rate.max - t.rate.min) / t.rate.median <= kSteadyRate;
  if (cpu_caps(t, at_link)) {
    return {"cpu",
            with_because(fmt::format("{} carries {} while {}", t.label, mbps(t.rate.median),
                                     cpu_text(t.cpu_bound, a))),
            hints};
  }
  const std::vector<std::string> buffers = buffer_hints(t, a, path_bits);
  if (t.rwnd_limited_frac > kWindowLimited || t.sndbuf_limited_frac > kWindowLimited ||
      !buffers.empty()) {
    for (const auto& h : buffers) hints.push_back(h);
    return {"tcp",
            with_because(fmt::format(
                "{} carries {}{}: a window or buffer limits it", t.label, mbps(t.rate.median),
                path_bits > 0 ? fmt::format(" ({} of {})", pct(t.rate.median * 8 / path_bits),
                                            format_rate_bits(path_bits))
                              : "")),
            hints};
  }
  if (path_bits <= 0) {
    return {"tcp",
            with_because(
                fmt::format("{} carries {} (link speed unknown: set [link] nominal in the plan)",
                            t.label, mbps(t.rate.median))),
            hints};
  }
  const double ratio = t.rate.median * 8 / path_bits;
  if (above_link) {
    return {"tcp",
            with_because(fmt::format(
                "{} carries {} (its fastest sample {}), above the {} nominal {} ({}): that "
                "speed is no ceiling here (a virtual link?), and no CPU or window limit shows",
                t.label, mbps(t.rate.median), mbps(t.rate.max), nominal ? "link's" : "interfaces'",
                format_rate_bits(path_bits), pct(t.rate.max * 8 / path_bits))),
            hints};
  }
  // Near the link's rate while every core was busy (the endpoint's own work, or
  // other jobs') and its samples swing: the CPU may hold it there as well as
  // the link, which holds one rate.
  const bool busy = t.cpu_bound.kind == "all cores" || t.competing_load_pct > 0;
  if (ratio >= kShortTcp && busy && !steady) {
    const std::string why =
        t.cpu_bound.empty()
            ? fmt::format("every core was busy, mostly with other processes ({:.0f} % of a core)",
                          t.competing_load_pct)
            : cpu_text(t.cpu_bound, a);
    return {"undecided",
            with_because(fmt::format(
                "{} reaches {} of the {} {} ({}), but its samples swing ({} to {}) while {}: the "
                "CPU may hold it there as well as the network; measure on a quieter machine",
                t.label, pct(ratio), format_rate_bits(path_bits), nominal ? "link" : "interfaces",
                mbps(t.rate.median), mbps(t.rate.min), mbps(t.rate.max), why)),
            hints,
            {"network", "cpu"}};
  }
  if (ratio >= kShortTcp) {
    return {"network",
            with_because(fmt::format("{} reaches {} of the {} {} ({}): the network is at its "
                                     "ceiling",
                                     t.label, pct(ratio), format_rate_bits(path_bits),
                                     nominal ? "link" : "interfaces", mbps(t.rate.median))),
            hints};
  }
  // Short of the link while other processes kept every core busy: the load alone
  // may have held it back, unless the samples hold one rate as a slower link or
  // a shaper does (a CPU shared with other jobs swings with their load).
  if (t.competing_load_pct > 0 && !steady) {
    return {"undecided",
            with_because(fmt::format(
                "{} carries {}, only {} of {}, but every core was busy during its samples, "
                "mostly with other processes ({:.0f} % of a core{}): the load alone may have "
                "held it back; measure on a quieter machine",
                t.label, mbps(t.rate.median), pct(ratio), format_rate_bits(path_bits),
                t.competing_load_pct,
                t.competing_process.empty() ? "" : ", busiest: " + t.competing_process)),
            hints,
            {"network path", "cpu"}};
  }
  // Below both ends' interfaces with no window, buffer or CPU limit: something on
  // the path between them (a slower switch port, Wi-Fi, a VPN, a shaper).
  std::string evidence = nominal ? fmt::format("the {} link", format_rate_bits(path_bits)) : nics;
  if (t.rtt_idle_us > 0 && t.rtt_us > 1.5 * t.rtt_idle_us) {
    evidence += fmt::format(
        "; RTT rises from {:.2f} ms idle to {:.2f} ms under load: a queue on "
        "the path",
        t.rtt_idle_us / 1000, t.rtt_us / 1000);
  }
  return {
      "network path",
      fmt::format("{} carries {}, only {} of {}, with no window, buffer or CPU limit: the "
                  "network path between the hosts caps it ({}{})",
                  t.label, mbps(t.rate.median), pct(ratio), format_rate_bits(path_bits), evidence,
                  t.retransmits > 0 ? fmt::format("; {} retransmits", t.retransmits) : ""),
      hints};
}

// The row that stands for the capping layer of a TCP explanation: the link
// when the network is at its ceiling, else the TCP row.
std::string tcp_cap_key(const Analysis& a, const Row& t, const std::string& layer) {
  return layer == "network" && find_row(a, "link") ? "link" : t.key;
}

// Row keys that a finding already explained (TCP) or named CPU-bound.
struct Said {
  std::set<std::string> tcp, cpu;
  // Rows a protocol verdict of their own judged, CPU included: no second
  // finding names the CPU for them when that verdict did not (busy cores do
  // not cap a row at its ceiling beneath).
  std::set<std::string> judged;
};

// ---------------------------------------------------------------------------
// Disk to disk, the hand method's paths.

void path_verdict(Analysis& a, Said& said, const std::string& name, const Row* src_disk,
                  const Row* tcp, const Row* dst_disk) {
  struct Layer {
    const Row* row;
    std::string name;  // "server disk", ...
    std::string what;  // "reads", ...
  };
  const bool down = name == "server -> client";
  std::vector<Layer> layers;
  if (src_disk) layers.push_back({src_disk, down ? "server disk" : "client disk", "reads"});
  if (tcp) layers.push_back({tcp, "TCP", "carries"});
  if (dst_disk) layers.push_back({dst_disk, down ? "client disk" : "server disk", "writes"});
  if (layers.empty()) return;
  std::stable_sort(layers.begin(), layers.end(), [](const Layer& x, const Layer& y) {
    return x.row->rate.median < y.row->rate.median;
  });
  Finding f;
  f.path = name;
  for (const Row* r : {src_disk, tcp, dst_disk}) {
    if (!r) continue;
    if (r == tcp && find_row(a, "link")) f.rows.push_back("link");
    f.rows.push_back(r->key);
  }
  // A "disk" row that measured RAM: the real disk is unmeasured and may be
  // slower than any layer here, so the path cannot tell.
  for (const Row* r : {src_disk, dst_disk}) {
    if (!r || r->medium_reason.empty()) continue;
    f.layer = "undecided";
    f.undecided_reason = "medium";
    f.candidates = {r->where + " disk"};
    f.text = fmt::format("{}: cannot tell what caps it: {}.", name, r->medium_reason);
    a.findings.push_back(f);
    return;
  }
  const Layer& cap = layers[0];
  std::string others;
  for (size_t i = 1; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    others += fmt::format("{}{}{} {} {}", i > 1 ? ", " : "", l.row->layer == "tcp" ? "" : "the ",
                          l.name, l.what, mbps(l.row->rate.median));
  }
  if (layers.size() > 1) {
    const RatioInterval ri = bootstrap_median_ratio(cap.row->samples, layers[1].row->samples);
    f.ratio = ri.ratio;
    f.ratio_lo = ri.lo;
    f.ratio_hi = ri.hi;
    // The two slowest within each other's noise: either may cap the path.
    if (ri.hi >= 1 && ri.lo < 1 && cap.row->rate.n > 1 && layers[1].row->rate.n > 1) {
      f.layer = "undecided";
      f.undecided_reason = "noise";
      f.candidates = {cap.row->layer == "tcp" ? "tcp" : cap.name,
                      layers[1].row->layer == "tcp" ? "tcp" : layers[1].name};
      Row tmp = *cap.row;
      tmp.ratio = ri.ratio;
      tmp.ratio_lo = ri.lo;
      tmp.ratio_hi = ri.hi;
      f.suggested_count = suggested_count(tmp);
      f.text = fmt::format(
          "{}: the {} ({}) and the {} ({}) are within each other's noise (ratio {:.2f}, 95 % "
          "interval {:.2f}-{:.2f}): either may cap it; repeat with count = {}.",
          name, cap.name, mbps(cap.row->rate.median), layers[1].name,
          mbps(layers[1].row->rate.median), ri.ratio, ri.lo, ri.hi, f.suggested_count);
      a.findings.push_back(f);
      return;
    }
  }
  if (cap.row->layer == "tcp") {
    TcpExplanation e = explain_tcp(*cap.row, a);
    said.tcp.insert(cap.row->key);
    if (e.layer == "cpu") {
      said.cpu.insert(cap.row->key);
      set_cpu(f, *cap.row, a);
    }
    set_tcp_layer(f, e);
    f.cap = e.layer == "undecided" ? "" : tcp_cap_key(a, *cap.row, e.layer);
    if (f.ratio == 0) f.ratio = cap.row->ratio;
    f.text = fmt::format("{}: {} caps it. {}", name,
                         e.layer == "network"        ? "the network"
                         : e.layer == "network path" ? "the network path"
                         : e.layer == "cpu"          ? "the CPU"
                         : e.layer == "undecided"    ? "TCP, or the load on the machine,"
                                                     : "the TCP layer",
                         e.text);
    for (auto& h : e.hints) add_hint(f, h);
  } else if (!cap.row->cpu_bound.empty()) {
    said.cpu.insert(cap.row->key);
    set_cpu(f, *cap.row, a);
    f.text = fmt::format("{}: the CPU caps it: the {} {} {} while {}", name, cap.name, cap.what,
                         mbps(cap.row->rate.median), cpu_text(cap.row->cpu_bound, a));
  } else {
    f.layer = cap.name;
    f.cap = cap.row->key;
    f.text = fmt::format(
        "{}: the {} caps it: it {} {}{}", name, cap.name, cap.what, mbps(cap.row->rate.median),
        cap.row->size ? fmt::format(" ({} files)", format_size(cap.row->size)) : "");
  }
  if (!others.empty()) f.text += fmt::format("; {}", others);
  if (layers.size() > 1 && f.ratio >= kAtCeiling) {
    f.text += fmt::format(" (the {} is within 10 %: both are near their ceiling)", layers[1].name);
  }
  f.text += ".";
  a.findings.push_back(f);
}

// ---------------------------------------------------------------------------
// Protocols.

// Values in the server's Samba config worse than Samba's defaults, for `op`.
std::vector<std::string> samba_misconfigured(const Analysis& a, const std::string& op) {
  std::vector<std::string> out;
  if (!a.server.samba_known) return out;
  const std::string key = op == "read" ? "smb2 max read" : "smb2 max write";
  for (const std::string& k : {key, std::string("smb2 max trans")}) {
    auto it = a.server.samba.find(k);
    if (it == a.server.samba.end()) continue;
    const uint64_t v = max_of_sysctl(it->second);
    if (v > 0 && v < kSambaDefaultMaxIo) {
      out.push_back(
          fmt::format("`{} = {}` in the server's Samba config ({} per request; "
                      "Samba's default is {}): remove it or raise it",
                      k, it->second, format_size(v), format_size(kSambaDefaultMaxIo)));
    }
  }
  return out;
}

// A property of a protocol row as a number (0 when absent).
uint64_t property_number(const Row& r, const char* key) {
  auto it = r.properties.find(key);
  return it == r.properties.end() ? 0 : max_of_sysctl(it->second);
}

// What the client's own bytes in flight allow over the path's round trip,
// bytes/s; 0 when either is unknown.
double client_window_rate(const Row& r, const Analysis& a) {
  const uint64_t in_flight = property_number(r, "in_flight_bytes");
  const Row* t = tcp_row(a.rows, r.op == "read" ? "server->client" : "client->server");
  const double rtt_us = t ? (t->rtt_idle_us > 0 ? t->rtt_idle_us : t->rtt_us) : 0;
  if (in_flight == 0 || rtt_us <= 0) return 0;
  return double(in_flight) / (rtt_us / 1e6);
}

// A request size the client itself held its calls to, bytes (0: none): a
// driver that could not send requests as large as it was asked or the server
// takes (libnfs 4.0's NFSv4 WRITEs, say) records `write_size_limit` /
// `read_size_limit` in its properties, with the reason in `<key>_reason`.
uint64_t client_size_limit(const Row& r) {
  return property_number(r, r.op == "read" ? "read_size_limit" : "write_size_limit");
}

// The path's round trip, µs: the TCP stage's idle RTT in `r`'s direction, else
// the driver's own measure of its handshake; 0 when neither is known.
double path_rtt_us(const Row& r, const Analysis& a) {
  const Row* t = tcp_row(a.rows, r.op == "read" ? "server->client" : "client->server");
  if (t && t->rtt_idle_us > 0) return t->rtt_idle_us;
  if (t && t->rtt_us > 0) return t->rtt_us;
  auto it = r.properties.find("handshake_rtt_ms");
  if (it != r.properties.end()) {
    try {
      return std::stod(it->second) * 1000;
    } catch (const std::exception&) {
    }
  }
  return 0;
}

// The busiest thread of `role` among an end's own processes, % of a core; 0 none.
double busiest_thread(const Row& r, const char* host, const char* role) {
  auto it = r.cpu.find(host);
  if (it == r.cpu.end()) return 0;
  double best = 0;
  for (const auto& p : it->second.procs) {
    if (!p.other_netns && p.role == role) best = std::max(best, p.top_thread_pct);
  }
  return best;
}

// The share of its time a client leaves the path idle between synchronous
// calls of `io_size` bytes (a round trip each); 0 when the driver does not
// say. With `connections` N (smb's helper connections), each moves rate/N and
// idles d = (rate/N) / io_size x RTT of its time, and the others' calls cover
// that while they are busy: the path idles max(0, 1 - N (1 - d)) (d for N = 1).
double client_drain_fraction(const Row& r, const Analysis& a) {
  const uint64_t io = property_number(r, "io_size");
  const double rtt_us = path_rtt_us(r, a);
  if (io == 0 || rtt_us <= 0 || r.rate.median <= 0) return 0;
  const double n = double(std::max<uint64_t>(property_number(r, "connections"), 1));
  const double each = r.rate.median / n / double(io) * rtt_us / 1e6;
  return std::max(0.0, 1 - n * (1 - std::min(each, 1.0)));
}

std::string direction_words(const Row& r) {
  return r.op == "read" ? "reading and serving together cost"
                        : "receiving and writing together cost";
}

// Marks an undecided finding.
void undecided(Finding& f, const std::string& reason, std::vector<std::string> candidates,
               std::string text) {
  f.layer = "undecided";
  f.undecided_reason = reason;
  f.candidates = std::move(candidates);
  f.text = std::move(text);
}

// How much longer each file of `r` takes than `beneath` (TCP, or the server
// disk: layers without per-file round trips) would take for it, in round trips
// of the path; -1 when unknown.
double extra_round_trips(const Row& r, const Row& beneath, const Analysis& a) {
  const double rtt_us = path_rtt_us(r, a);
  if (r.size == 0 || rtt_us <= 0 || r.rate.median <= 0 || beneath.rate.median <= 0) return -1;
  const double extra_s = double(r.size) / r.rate.median - double(r.size) / beneath.rate.median;
  return extra_s / (rtt_us / 1e6);
}

// Files of `r` could not tell its layer from the path's round trips: each took at
// most kPerFileRoundTrips round trips longer than `beneath` allows, which setup
// and TCP's slow start alone may cost. Marks `f` undecided ("latency") with the
// file size at which that many round trips are within the ceiling's margin
// (10 %), and returns true.
bool undecided_by_latency(Finding& f, const Row& r, const Row& beneath, const Analysis& a,
                          const std::string& path, const std::string& what) {
  const double trips = extra_round_trips(r, beneath, a);
  if (trips < 0 || trips > kPerFileRoundTrips) return false;
  const double rtt_s = path_rtt_us(r, a) / 1e6;
  // At ratio >= kAtCeiling: S / v >= kAtCeiling / (1 - kAtCeiling) x the round trips' time.
  const double want =
      kPerFileRoundTrips * rtt_s * beneath.rate.median * kAtCeiling / (1 - kAtCeiling);
  // Up to two significant digits, so the advice reads as a size to type.
  const double step = std::pow(10.0, std::floor(std::log10(std::max(want, 1.0))) - 1);
  f.suggested_size = static_cast<uint64_t>(std::ceil(want / step) * step);
  f.cap = "";
  undecided(f, "latency", {r.layer, "network"},
            fmt::format("{}: {} moves {} = {} of {} ({}), but each {} file takes only {:.0f} round "
                        "trips ({:.2f} ms each) longer than {} alone would, no more than a "
                        "file's setup and TCP's slow start may cost on this path: the files are "
                        "too small to tell the {} layer from the path's latency; repeat with "
                        "files of at least {}",
                        path, what, mbps(r.rate.median), pct(r.ratio),
                        beneath.layer == "tcp" ? "TCP" : beneath.label, mbps(beneath.rate.median),
                        format_size(r.size), trips, rtt_s * 1000,
                        beneath.layer == "tcp" ? "TCP" : "the disk", protocol_name(r.layer),
                        format_size(f.suggested_size)));
  return true;
}

// A row measured while every core of an end was busy, mostly with other
// processes, and below the layer beneath: the load alone may have made it slow.
// Marks `f` undecided ("load") and returns true.
bool undecided_by_load(Finding& f, const Row& r, const std::string& layer, const std::string& path,
                       const std::string& what) {
  if (r.competing_load_pct <= 0) return false;
  f.cap = "";
  undecided(f, "load", {layer, "cpu"},
            fmt::format("{}: {} moves {} = {} of the layer beneath, but every core was busy "
                        "during its samples, mostly with other processes ({:.0f} % of a core{}): "
                        "the load alone may have made it slow; measure on a quieter machine",
                        path, what, mbps(r.rate.median), pct(r.ratio), r.competing_load_pct,
                        r.competing_process.empty() ? "" : ", busiest: " + r.competing_process));
  return true;
}

// A row whose ends did report CPU, but over windows too short to count (under
// kMinCpuWindow in total on each end: small files moving fast): nothing rules
// out the CPU. Marks `f` undecided ("short") with the file size whose samples
// would last long enough (twice the minimum, over the same count), and returns
// true. Rows without any CPU report (older agents) keep their verdict.
bool undecided_by_short_cpu(Finding& f, const Row& r, const std::string& layer,
                            const std::string& path, const std::string& what) {
  if (r.cpu.empty() || r.rate.n == 0 || r.rate.median <= 0 || r.size == 0) return false;
  double longest = 0;
  for (const auto& [host, u] : r.cpu) longest = std::max(longest, u.seconds);
  if (longest >= kMinCpuWindow) return false;
  const double want = 2 * kMinCpuWindow * r.rate.median / double(r.rate.n);
  const double step = std::pow(10.0, std::floor(std::log10(std::max(want, 1.0))) - 1);
  f.suggested_size =
      std::max<uint64_t>(static_cast<uint64_t>(std::ceil(want / step) * step), 2 * r.size);
  f.cap = "";
  undecided(f, "short", {layer, "cpu"},
            fmt::format("{}: {} moves {} = {} of the layer beneath, but the CPU was sampled "
                        "over only {:.2f} s of its {} samples, too short to rule the CPU out; "
                        "repeat with files of at least {}",
                        path, what, mbps(r.rate.median), pct(r.ratio), longest, r.rate.n,
                        format_size(f.suggested_size)));
  return true;
}

// The layer name a row stands for in a verdict.
std::string layer_name(const Row& r) {
  if (r.layer == "disk") return r.where + " disk";
  return r.layer;
}

// The verdict for one protocol row (its biggest files), e.g. "SMB from RAM
// read 50 MB/s = 43 % of TCP (117 MB/s): the SMB layer caps it".
Finding protocol_finding(const Analysis& a, Said& said, const Row& r, bool extras) {
  const std::string proto = protocol_name(r.layer);
  const bool read = r.op == "read";
  const std::string what =
      fmt::format("{} {} {}", proto, r.where == "ram" ? "from RAM" : "from disk", r.op);
  const std::string path = fmt::format("{} {} {}", r.layer, r.where, r.op);
  const Row* b = find_row(a, r.below);
  Finding f;
  f.path = path;
  f.ratio = r.ratio;
  f.ratio_lo = r.ratio_lo;
  f.ratio_hi = r.ratio_hi;
  if (r.layer == "smb") f.misconfigured = samba_misconfigured(a, r.op);
  const Row* tcp = tcp_row(a.rows, read ? "server->client" : "client->server");
  const Row* ram = proto_row(a.rows, r.layer, "ram", r.op, r.size);
  const Row* disk = disk_row(a.rows, "server", r.op, r.size);
  if (r.where == "disk" && disk) f.rows.push_back(disk->key);
  if (tcp && find_row(a, "link")) f.rows.push_back("link");
  if (tcp) f.rows.push_back(tcp->key);
  if (r.where == "disk" && ram) f.rows.push_back(ram->key);
  f.rows.push_back(r.key);
  auto finish = [&]() -> Finding {
    if (extras) {
      for (const auto& m : f.misconfigured) add_hint(f, m);
      // The negotiated request size, when it is small and the config does not say why.
      const uint64_t io = property_number(r, read ? "max_read_size" : "max_write_size");
      if (r.layer == "smb" && f.misconfigured.empty() && io > 0 && io < (1u << 20)) {
        add_hint(f, fmt::format("the SMB session moves at most {} per {} request (negotiated): "
                                "the server limits it",
                                format_size(io), r.op));
      }
    }
    f.text += ".";
    return f;
  };
  const std::string size_note =
      r.below_size ? fmt::format(" (held against {} files, the nearest size measured)",
                                 format_size(r.below_size))
                   : "";

  // A figure a cache, a bad figure beneath or the wrong medium may have made:
  // no verdict rests on it.
  for (const Row* x : {&r, b}) {
    if (!x || !(x->cache_suspected || x->anomaly || !x->medium_reason.empty())) continue;
    const char* reason = !x->medium_reason.empty() ? "medium"
                         : x->cache_suspected      ? "cache"
                                                   : "anomaly";
    undecided(f, reason, {r.layer, b ? layer_name(*b) : ""},
              fmt::format("{}: cannot tell what caps it: {}", path,
                          !x->medium_reason.empty() ? x->medium_reason
                          : x->cache_suspected      ? x->cache_reason
                                                    : x->anomaly_reason));
    f.cap = "";
    return finish();
  }
  // One of the endpoint's processes at its quota or a thread at a core caps it
  // outright. Every core busy caps it unless it already reaches the layer
  // beneath (a row at the disk's ceiling is held by the disk, busy or not).
  if (cpu_caps(r, b && level_of(r, *b) == Level::kCeiling)) {
    said.cpu.insert(r.key);
    set_cpu(f, r, a);
    f.text = fmt::format(
        "{}: {} moves {}{}: the CPU caps it: {}", path, what, mbps(r.rate.median),
        b ? fmt::format(" = {} of {}", pct(r.ratio), b->layer == "tcp" ? "TCP" : b->label) : "",
        cpu_text(r.cpu_bound, a));
    return finish();
  }
  // Nothing beneath was measured (its stage disabled or failed): a figure with
  // no ceiling to hold it against names no layer.
  if (!b) {
    const std::string missing =
        r.where == "ram" ? fmt::format("TCP {}", read ? "server -> client" : "client -> server")
                         : fmt::format("the server disk ({}s) and {} from RAM", r.op, proto);
    undecided(f, "unmeasured", {r.layer, r.where == "ram" ? "tcp" : "server disk"},
              fmt::format("{}: {} moves {}, but {} was not measured (its stage was disabled or "
                          "failed), so nothing shows whether a layer beneath holds it: run the "
                          "{} stage too",
                          path, what, mbps(r.rate.median), missing,
                          r.where == "ram" ? "TCP" : "disk (and a RAM share's)"));
    return finish();
  }
  const std::string below_name = b->layer == "tcp" ? "TCP" : b->label;
  const Level level = level_of(r, *b);
  if (level == Level::kNoise) {
    f.suggested_count = suggested_count(r);
    undecided(f, "noise", {r.layer, layer_name(*b)},
              fmt::format("{}: {} ({}) and {} ({}) are within each other's noise (ratio {:.2f}, "
                          "95 % interval {:.2f}-{:.2f}){}: repeat with count = {}",
                          path, what, mbps(r.rate.median), below_name, mbps(b->rate.median),
                          r.ratio, r.ratio_lo, r.ratio_hi, size_note, f.suggested_count));
    return finish();
  }
  if (r.where == "ram") {
    if (level == Level::kCeiling) {
      TcpExplanation e = explain_tcp(*b, a);
      if (e.layer == "cpu") set_cpu(f, *b, a);
      set_tcp_layer(f, e);
      f.cap = e.layer == "undecided" ? "" : tcp_cap_key(a, *b, e.layer);
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}): the protocol is at TCP's ceiling, so the layer "
          "beneath caps it. {}",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), e.text);
      for (auto& h : e.hints) add_hint(f, h);
      return finish();
    }
    // One request in flight: the client's and the server's threads take turns, so
    // neither fills a core while the two together do. The client's choice (one
    // request at a time) caps it, not the server.
    const uint64_t in_flight = property_number(r, "in_flight_bytes");
    const uint64_t request = property_number(r, "request_size");
    const double client_thread = busiest_thread(r, "client", "agent");
    const double server_thread = busiest_thread(r, "server", "server");
    // What competing load took from them: the time the two ends' own threads
    // waited for a core (a loaded machine: they would have taken turns at a
    // whole core, and got less of it).
    double waited = 0;
    for (const char* host : {"client", "server"}) {
      if (auto it = r.cpu.find(host); it != r.cpu.end() && it->second.seconds >= kMinCpuWindow) {
        waited += it->second.own_wait_pct;
      }
    }
    if (in_flight > 0 && request > 0 && in_flight <= request &&
        client_thread + server_thread + waited >= kThreadSaturated) {
      f.layer = "probe";
      f.lower_bound = true;
      f.cap = r.key;
      f.cpu.host = "both";
      f.cpu.kind = "turns";
      f.cpu.pct = client_thread + server_thread;
      f.cpu.role = "agent";
      f.cpu.process = "chokepoint-agent + the file server";
      // Said only where the wait is a real share (10 % of a core): a few % is noise.
      const bool starved = client_thread + server_thread < kThreadSaturated && waited >= 10;
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}) with one request of {} in flight: chokepoint's "
          "client (a thread at {:.0f} % of a core) and the server (a thread at {:.0f} %) take "
          "turns, {}: the figure is a lower bound limited by the client, not the server",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), format_size(request),
          client_thread, server_thread,
          starved ? fmt::format("and waited {:.0f} % of a core for a CPU that other processes "
                                "held: together a whole core (on a quieter machine the figure "
                                "rises)",
                                waited)
                  : "together a whole core");
      add_hint(f,
               "keep more requests in flight: larger calls (`options = io_size=8MiB`) or "
               "more connections (`connections=2`)");
      return finish();
    }
    // Below TCP: the protocol layer, unless the client's own window is the limit.
    const double window = client_window_rate(r, a);
    const double drain = client_drain_fraction(r, a);
    f.cap = r.key;
    if (const uint64_t limit = client_size_limit(r); limit > 0) {
      // The client sent smaller requests than the server takes: a figure of
      // chokepoint's client, whatever the server could do with larger ones.
      f.layer = "probe";
      f.lower_bound = true;
      const auto reason =
          r.properties.find(read ? "read_size_limit_reason" : "write_size_limit_reason");
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}) with chokepoint's client held to {} per {} request{}: "
          "the figure is a lower bound limited by the client, not the server",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), format_size(limit),
          r.op, reason == r.properties.end() ? "" : " (" + reason->second + ")");
      return finish();
    }
    if (drain >= kProbeDrain && !(window > 0 && r.rate.median >= kProbeLimited * window)) {
      f.layer = "probe";
      f.lower_bound = true;
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}), but chokepoint's client waits a round trip ({:.2f} "
          "ms) after every {} call, {} of its time: the figure is a lower bound limited by the "
          "client, not the server",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median),
          path_rtt_us(r, a) / 1000, format_size(property_number(r, "io_size")), pct(drain));
      add_hint(f,
               "give the share larger calls (`options = io_size=32MiB`) or more connections "
               "(`connections=2`) to keep the path full");
      return finish();
    }
    if (window > 0 && r.rate.median >= kProbeLimited * window) {
      f.layer = "probe";
      f.lower_bound = true;
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}), which is what chokepoint's client keeps in flight "
          "allows ({} over a {:.2f} ms round trip = {}): the figure is a lower bound limited by "
          "the client, not the server",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median),
          format_size(property_number(r, "in_flight_bytes")),
          (tcp->rtt_idle_us > 0 ? tcp->rtt_idle_us : tcp->rtt_us) / 1000, mbps(window));
      return finish();
    }
    if (undecided_by_latency(f, r, *b, a, path, what)) return finish();
    if (undecided_by_load(f, r, r.layer, path, what)) return finish();
    if (undecided_by_short_cpu(f, r, r.layer, path, what)) return finish();
    f.layer = r.layer;
    f.text = fmt::format(
        "{}: {} moves {} = {} of TCP ({}, 95 % interval {}-{}): the {} layer "
        "caps it",
        path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), pct(r.ratio_lo),
        pct(r.ratio_hi), proto);
    return finish();
  }
  // From disk: against min(protocol over RAM, server disk), at the same size.
  std::string context;
  if (ram) context += fmt::format("{} from RAM moves {}", proto, mbps(ram->rate.median));
  if (disk) {
    context += fmt::format("{}the server disk {} {}", context.empty() ? "" : ", ",
                           read ? "reads" : "writes", mbps(disk->rate.median));
  }
  // Faster than the layer beneath is at its ceiling too: past the cache rule,
  // only a protocol over RAM that a CPU held (no ceiling of its own) is beaten.
  if (level == Level::kCeiling || level == Level::kFaster) {
    if (b->layer == "disk") {
      f.layer = "server disk";
      f.cap = b->key;
      if (!b->cpu_bound.empty()) {
        set_cpu(f, *b, a);
        f.text = fmt::format("{}: {} moves {} = {} of the server disk, which is CPU-bound: {}{}",
                             path, what, mbps(r.rate.median), pct(r.ratio),
                             cpu_text(b->cpu_bound, a), size_note);
      } else {
        f.text = fmt::format(
            "{}: {} moves {} = {} of the server disk: the server disk caps it "
            "({}){}",
            path, what, mbps(r.rate.median), pct(r.ratio), context, size_note);
      }
    } else {
      // At the ceiling of the same protocol over RAM: the disk costs nothing here,
      // and what caps the protocol over RAM (TCP beneath it, a CPU, the client,
      // the protocol, or noise) caps it from disk too.
      Said scratch = said;
      const Finding over_ram = protocol_finding(a, scratch, *b, false);
      f.layer = over_ram.layer;
      f.cap = over_ram.cap;
      f.cpu = over_ram.cpu;
      f.lower_bound = over_ram.lower_bound;
      f.candidates = over_ram.candidates;
      f.undecided_reason = over_ram.undecided_reason;
      f.suggested_count = over_ram.suggested_count;
      f.suggested_size = over_ram.suggested_size;
      f.hints = over_ram.hints;
      std::string why = over_ram.text;
      if (!why.empty() && why.back() == '.') why.pop_back();
      f.text = fmt::format(
          "{}: {} moves {} = {} of {} from RAM ({}){}: the disk costs nothing here, and what caps "
          "{} from RAM caps it: {}",
          path, what, mbps(r.rate.median), pct(r.ratio), proto, context, size_note, proto, why);
    }
    return finish();
  }
  // Below the protocol over RAM with the server disk measured on RAM (the disk
  // stage's disk_dir on tmpfs): the real disk is unmeasured, as below.
  if (disk && !disk->medium_reason.empty()) {
    undecided(
        f, "medium", {"server disk", r.layer + " + disk"},
        fmt::format("{}: cannot tell what caps it: {} moves {}, only {} of {} from RAM, "
                    "and {}",
                    path, what, mbps(r.rate.median), pct(r.ratio), proto, disk->medium_reason));
    f.cap = "";
    return finish();
  }
  // Below the protocol over RAM with the server disk unmeasured (the disk stage
  // disabled or failed): the disk alone may be what holds it.
  if (!disk) {
    undecided(f, "unmeasured", {"server disk", r.layer + " + disk"},
              fmt::format("{}: {} moves {}, only {} of {} from RAM ({}), but the server disk's "
                          "{}s were not measured (the disk stage was disabled or failed): the "
                          "disk alone may hold it; run the disk stage too",
                          path, what, mbps(r.rate.median), pct(r.ratio), proto,
                          mbps(b->rate.median), r.op));
    f.cap = "";
    return finish();
  }
  // Below both: the two together cost more than either alone, unless the files
  // are too short for the path's round trips (held against the disk, which has
  // none; the protocol over RAM pays them too) or the load may explain it.
  if (b->layer == "disk" && undecided_by_latency(f, r, *b, a, path, what)) return finish();
  if (undecided_by_load(f, r, r.layer + " + disk", path, what)) return finish();
  if (undecided_by_short_cpu(f, r, r.layer + " + disk", path, what)) return finish();
  f.layer = r.layer + " + disk";
  f.cap = r.key;
  f.text = fmt::format("{}: {} moves {}, only {} of {} ({}): {} more than either layer alone{}",
                       path, what, mbps(r.rate.median), pct(r.ratio), below_name, context,
                       direction_words(r), size_note);
  // Readahead helps a protocol reading a disk that reads fast on its own (the
  // disk is not the cap), and only while it is small.
  const HostFacts& h = a.server;
  if (read && disk && h.read_ahead_kb >= 0) {
    const std::string dev = h.disk_device.empty() ? "DEV" : "/dev/" + h.disk_device;
    if (h.read_ahead_kb < static_cast<int64_t>(kGoodReadaheadKb)) {
      // blockdev counts 512-byte sectors: 4096 = 2 MiB.
      add_hint(f, fmt::format("the server disk reads {} on its own but {} from disk reads {}: "
                              "raise its readahead (now {} KiB on {}) with `blockdev --setra "
                              "4096 {}` (2 MiB) or `hdparm -a 4096 {}`",
                              mbps(disk->rate.median), proto, mbps(r.rate.median), h.read_ahead_kb,
                              h.disk_device.empty() ? "its disk" : h.disk_device, dev, dev));
    } else {
      f.text += fmt::format(
          "; the server's readahead is already {} KiB on {}: more would not "
          "help",
          h.read_ahead_kb, h.disk_device);
    }
  }
  return finish();
}

void protocol_verdict(Analysis& a, Said& said, const Row& r) {
  said.judged.insert(r.key);
  a.findings.push_back(protocol_finding(a, said, r, true));
}

// ---------------------------------------------------------------------------
// Numbers that may not be what they seem.

// Marks rows whose figure a cache may have produced (samples without O_DIRECT
// on files that fit in RAM; a layer faster than the one beneath beyond both
// rows' noise where a cache sits between them), and rows faster than the layer
// beneath where no cache can explain it (anomaly). Adds a finding for each.
void judge_cache(Analysis& a) {
  for (auto& r : a.rows) {
    if (r.rate.n == 0) continue;
    std::vector<std::string> reasons, anomalies;
    if (r.cache_possible > 0) {
      const std::string role = r.layer == "disk" ? r.where : "server";
      const uint64_t mem = host_facts(a, role).memory_bytes;
      if (mem > 0 && r.size >= mem) {
        a.findings.push_back(make_finding(
            "cache", "cache",
            fmt::format("{} of {} samples of {} ran without O_DIRECT, but the {} files are "
                        "larger than the {}'s RAM ({}), so the page cache cannot have served "
                        "most of them.",
                        r.cache_possible, r.rate.n, r.label, format_size(r.size), role,
                        format_size(mem)),
            {r.key}));
      } else {
        const std::string fits = mem > 0
                                     ? fmt::format(" and the {} files fit in the {}'s {} of RAM",
                                                   format_size(r.size), role, format_size(mem))
                                     : "";
        // The agent's own reason where it gave one (ZFS's ARC keeps what
        // eviction drops), else the one a disk sample without O_DIRECT has.
        reasons.push_back(
            r.cache_possible_why.empty()
                ? fmt::format("{} of {} samples of {} ran without O_DIRECT (the filesystem "
                              "refused it){}, so the page cache may have served them",
                              r.cache_possible, r.rate.n, r.label, fits)
                : fmt::format("{} of {} samples of {}: {}{}, so a cache may have served them",
                              r.cache_possible, r.rate.n, r.label, r.cache_possible_why, fits));
      }
    }
    auto faster = [&](const Row& beneath) {
      const RatioInterval ri = bootstrap_median_ratio(r.samples, beneath.samples);
      return level_of(ri.ratio, ri.lo, ri.hi, r.rate.median, beneath) == Level::kFaster;
    };
    const bool read = r.op == "read";
    if (is_protocol_row(r) && r.where == "disk") {
      // The server's page cache sits between the disk and the protocol.
      const Row* d = disk_row(a.rows, "server", r.op, r.size);
      const Row* ram = proto_row(a.rows, r.layer, "ram", r.op, r.size);
      for (const Row* beneath : {d, ram}) {
        if (!beneath || !faster(*beneath)) continue;
        // A protocol over RAM that a CPU held (one of the endpoint's processes at
        // its quota, a thread at a core, every core busy) is no ceiling of the
        // protocol: both rows wait on that CPU, whose share swings between
        // series, and no page cache serves a disk share faster than tmpfs
        // serves a RAM share, so beating it says nothing about a cache.
        if (beneath == ram && !ram->cpu_bound.empty()) continue;
        reasons.push_back(fmt::format(
            "{} moves {}, faster than {} ({}) beyond both rows' spread: {}", r.label,
            mbps(r.rate.median), beneath->label, mbps(beneath->rate.median),
            read ? "the server's page cache served part of it"
                 : "the server's page cache absorbed the writes (write-back), so the disk's "
                   "own limit does not show with files of this size"));
        break;
      }
    } else if (is_protocol_row(r) && r.where == "ram") {
      const Row* t = find_row(a, r.below);
      if (t && faster(*t)) {
        // Only a client that caches (a mounted filesystem's page cache) can beat TCP.
        if (r.layer == "path" && read) {
          reasons.push_back(fmt::format(
              "{} moves {}, faster than TCP carries ({}): the client's page cache served part "
              "of it",
              r.label, mbps(r.rate.median), mbps(t->rate.median)));
        } else {
          anomalies.push_back(fmt::format(
              "{} moves {}, faster than TCP carries ({}) beyond both rows' spread: the TCP "
              "figure is no ceiling here (noise, or the TCP probe limited by its own CPU)",
              r.label, mbps(r.rate.median), mbps(t->rate.median)));
        }
      }
    }
    if (!reasons.empty()) {
      r.cache_suspected = true;
      for (size_t i = 0; i < reasons.size(); ++i) r.cache_reason += (i ? "; " : "") + reasons[i];
      a.findings.push_back(
          make_finding("cache", "cache", "cache suspected: " + r.cache_reason + ".", {r.key}));
    }
    if (!anomalies.empty()) {
      r.anomaly = true;
      r.anomaly_reason = anomalies.front();
      a.findings.push_back(make_finding("cache", "anomaly", r.anomaly_reason + ".", {r.key}));
    }
  }
}

bool ram_backed(const std::string& fs) { return fs == "tmpfs" || fs == "ramfs"; }

// Protocol rows over a medium other than the one they claim: a "ram" share
// whose directory is on a disk measures that disk too, a "disk" share on tmpfs
// never touches a disk, and a client RAM dir on a disk puts the client's disk
// under every protocol row. Unknown filesystems ("", "unknown") are not judged.
void judge_medium(Analysis& a) {
  std::map<std::string, size_t> said;  // reason -> its config finding
  auto known = [](const std::string& fs) { return !fs.empty() && fs != "unknown"; };
  for (auto& r : a.rows) {
    if (r.layer == "disk" && r.rate.n > 0) {
      // A disk stage on tmpfs/ramfs measured RAM (tmpfs takes O_DIRECT since
      // Linux 6.6, so no sample says "cache"): no verdict may call it a disk.
      const std::string& fs = (r.where == "server" ? a.server : a.client).disk_fs;
      if (!ram_backed(fs)) continue;
      r.medium_reason =
          fmt::format("the {}'s disk_dir is on {}: the {} disk rows measured RAM, not a disk",
                      r.where, fs, r.where);
      const std::string fix =
          fmt::format("set [{}] disk_dir to a directory on the disk under test", r.where);
      if (auto it = said.find(r.medium_reason); it != said.end()) {
        a.findings[it->second].rows.push_back(r.key);
      } else {
        said[r.medium_reason] = a.findings.size();
        a.findings.push_back(make_finding("config", "config",
                                          fmt::format("{}: {}.", r.medium_reason, fix), {r.key}));
      }
      continue;
    }
    if (!is_protocol(r.layer) || r.rate.n == 0) continue;
    std::string reason, fix;
    if (r.where == "ram" && known(r.server_fs) && !ram_backed(r.server_fs)) {
      reason = fmt::format("the {} share measured as RAM is on {} on the server, not in RAM",
                           protocol_name(r.layer), r.server_fs);
      fix =
          "point the share's server_dir (and the share) at a tmpfs directory, or set its "
          "medium = disk";
    } else if (r.where == "disk" && ram_backed(r.server_fs)) {
      reason = fmt::format(
          "the {} share measured as disk is on {} on the server: it never "
          "touches a disk",
          protocol_name(r.layer), r.server_fs);
      fix = "point the share at a directory on the disk under test, or set its medium = ram";
    } else if (r.where == "disk" && !r.server_disk.empty() && !a.server.disk_device.empty() &&
               r.server_disk != a.server.disk_device) {
      // The disk stage measured another disk than the one the share reads: the
      // protocol-from-disk figure cannot be held against it.
      reason = fmt::format(
          "the {} share measured as disk is on {} on the server, but the server "
          "disk stage measured {} (disk_dir)",
          protocol_name(r.layer), r.server_disk, a.server.disk_device);
      fix = "set [server] disk_dir to a directory on the share's disk";
    } else if (known(a.client.ram_fs) && !ram_backed(a.client.ram_fs)) {
      reason = fmt::format(
          "the client's ram_dir is on {}, not in RAM, so the client's disk is "
          "part of every protocol figure",
          a.client.ram_fs);
      fix = "set [client] ram_dir to a tmpfs directory (/dev/shm on most Linux systems)";
    }
    if (reason.empty()) continue;
    r.medium_reason = reason;
    if (auto it = said.find(reason); it != said.end()) {
      a.findings[it->second].rows.push_back(r.key);
    } else {
      said[reason] = a.findings.size();
      a.findings.push_back(
          make_finding("config", "config", fmt::format("{}: {}.", reason, fix), {r.key}));
    }
  }
}

// A verdict resting on a figure a cache may have produced says so.
void flag_untrusted(Analysis& a) {
  for (auto& f : a.findings) {
    if (f.path == "cache" || f.layer == "undecided" || f.text.empty() || f.text.back() != '.') {
      continue;
    }
    std::string flags;
    for (const auto& key : f.rows) {
      const Row* r = find_row(a, key);
      if (r && r->cache_suspected) flags += (flags.empty() ? "" : ", ") + r->label;
    }
    if (flags.empty()) continue;
    f.text.pop_back();
    f.text += fmt::format("; cache suspected for {}, so that figure is not trusted.", flags);
  }
}

bool is_verdict_path(const std::string& path) {
  static const std::set<std::string> kOther = {"cache", "errors", "mtu", "cpu",
                                               "tcp",   "config", "load"};
  return !path.empty() && !kOther.count(path);
}

}  // namespace

std::string cpu_bound_brief(const CpuBound& c) {
  const std::string where = c.host == "both" ? "both ends" : c.host;
  if (c.kind == "quota") {
    return fmt::format("cpu: {} at its quota {:.0f} % ({})", c.process, c.limit_pct, where);
  }
  if (c.kind == "thread") {
    return fmt::format("cpu: a thread of {} at {:.0f} % ({})", c.process, c.pct, where);
  }
  if (c.kind == "turns") return fmt::format("client and server take turns ({:.0f} %)", c.pct);
  return fmt::format("cpu: all cores {:.0f} % busy ({})", c.pct, where);
}

Headline headline_of(const Analysis& a) {
  Headline h;
  h.text = a.headline;
  if (a.headline_finding < 0) return h;
  const Finding& f = a.findings[static_cast<size_t>(a.headline_finding)];
  h.path = f.path;
  h.layer = f.layer;
  if (const Row* r = find_row(a, f.cap)) {
    h.cap = r->label;
    h.cap_bytes_per_s = r->rate.median;
  }
  return h;
}

bool Analysis::has_verdict() const {
  for (const auto& f : findings)
    if (is_verdict_path(f.path)) return true;
  return false;
}

Analysis analyze(const RunRecord& run) {
  Analysis a;
  detect_link(run, a);
  a.rows = build_rows(run, a);
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
  judge_cache(a);
  judge_medium(a);
  std::vector<Finding> cache_findings = std::move(a.findings);
  a.findings.clear();
  Said said;

  path_verdict(a, said, "server -> client", disk_row(a.rows, "server", "read"),
               tcp_row(a.rows, "server->client"), disk_row(a.rows, "client", "write"));
  path_verdict(a, said, "client -> server", disk_row(a.rows, "client", "read"),
               tcp_row(a.rows, "client->server"), disk_row(a.rows, "server", "write"));

  // TCP against the link, where no path verdict already said it.
  for (const auto& r : a.rows) {
    if (r.layer != "tcp" || r.rate.n == 0 || said.tcp.count(r.key)) continue;
    said.tcp.insert(r.key);
    TcpExplanation e = explain_tcp(r, a);
    Finding f = make_finding("tcp", e.layer, e.text, {},
                             e.layer == "undecided" ? "" : tcp_cap_key(a, r, e.layer));
    set_tcp_layer(f, e);
    if (e.layer == "cpu") {
      said.cpu.insert(r.key);
      set_cpu(f, r, a);
    }
    f.ratio = r.ratio;
    if (find_row(a, "link")) f.rows.push_back("link");
    f.rows.push_back(r.key);
    for (auto& h : e.hints) add_hint(f, h);
    f.text += ".";
    a.findings.push_back(f);
  }
  // Protocol rows: the biggest files of each protocol, medium and op.
  std::vector<Finding> before_protocols = std::move(a.findings);
  a.findings.clear();
  for (const auto& r : a.rows) {
    if (is_protocol_row(r) && r.rate.n > 0 && proto_row(a.rows, r.layer, r.where, r.op) == &r) {
      protocol_verdict(a, said, r);
    }
  }
  std::vector<Finding> protocols = std::move(a.findings);
  a.findings = std::move(before_protocols);
  // A CPU-bound row that no verdict judged yet (a TCP or protocol verdict that
  // did not name the CPU weighed it already: at its ceiling, or undecided).
  for (const auto& r : a.rows) {
    if (r.layer == "link" || is_sweep(r) || r.rate.n == 0 || r.cpu_bound.empty() ||
        said.cpu.count(r.key) || said.tcp.count(r.key) || said.judged.count(r.key)) {
      continue;
    }
    Finding f = make_finding("cpu", "cpu",
                             fmt::format("{} moves {} while {}.", r.label, mbps(r.rate.median),
                                         cpu_text(r.cpu_bound, a)),
                             {r.key}, r.key);
    f.cpu = r.cpu_bound;
    f.lower_bound = r.cpu_bound.role == "agent";
    a.findings.push_back(f);
  }
  // Rows measured while other processes kept every core busy: one note.
  {
    std::vector<std::string> keys, labels;
    std::string busiest;
    double most = 0;
    for (const auto& r : a.rows) {
      if (r.competing_load_pct <= 0) continue;
      keys.push_back(r.key);
      labels.push_back(r.label);
      if (r.competing_load_pct > most) {
        most = r.competing_load_pct;
        busiest = r.competing_process;
      }
    }
    if (!keys.empty()) {
      std::string list;
      for (size_t i = 0; i < labels.size(); ++i) list += (i ? ", " : "") + labels[i];
      a.findings.push_back(make_finding(
          "load", "competing load",
          fmt::format("every core was busy while {} ran, mostly with other processes (up to "
                      "{:.0f} % of a core{}): their figures may be low; measure on a quieter "
                      "machine to be sure.",
                      list, most, busiest.empty() ? "" : ", busiest: " + busiest),
          keys));
    }
  }
  for (auto& f : cache_findings) a.findings.push_back(std::move(f));
  for (const auto& r : a.rows) {
    if (r.failed > 0) {
      a.findings.push_back(
          make_finding("errors", "error",
                       fmt::format("{} of {} samples of {} failed; the figures use the rest.",
                                   r.failed, r.failed + r.rate.n, r.label),
                       {r.key}));
    }
  }
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    Finding f = make_finding("mtu", "network",
                             fmt::format("MTU mismatch on the data path: server {} vs client {}.",
                                         a.server_mtu, a.client_mtu));
    f.hints.push_back(mtu_hint(a));
    a.findings.push_back(f);
  }
  for (auto& f : protocols) a.findings.push_back(std::move(f));
  flag_untrusted(a);
  // The headline answers the user's usual path: reading from the server's
  // disk through the protocol, else from its RAM, else disk/TCP.
  auto pick = [&](auto&& wanted) {
    for (size_t i = 0; i < a.findings.size() && a.headline_finding < 0; ++i) {
      if (wanted(a.findings[i].path)) a.headline_finding = static_cast<int>(i);
    }
  };
  for (const std::string want : {"disk read", "ram read"}) {
    pick([&](const std::string& path) {
      return path.size() > want.size() &&
             path.compare(path.size() - want.size(), std::string::npos, want) == 0;
    });
  }
  pick([](const std::string& path) {
    return path == "server -> client" || path == "client -> server";
  });
  if (a.headline_finding >= 0) a.headline = a.findings[a.headline_finding].text;
  if (a.headline.empty()) {
    a.headline = run.stages.empty() ? "No stage ran, so there is no verdict."
                                    : "No stage produced samples, so there is no verdict.";
  }
  return a;
}

}  // namespace cp::analysis
