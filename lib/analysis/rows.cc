// Decoding stored samples into rows: one per layer, place, op and size, with
// their samples, CPU, TCP and driver evidence folded in.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/judge.h"
#include "core/bootstrap.h"
#include "core/cpu_message.h"
#include "core/stored_run.h"
#include "transfer/driver.h"

namespace cp::analysis {
namespace {

// Folds one sample's CPU summaries (each end's) into the row.
void add_cpu(Row& row, const std::vector<stored::EndCpu>& cpu) {
  for (const auto& [host, c] : cpu) {
    if (host == "server" && row.server_pid == 0) row.server_pid = c.server_pid;
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
        row.max_core_top.reset();
        if (!c.top.empty()) row.max_core_top = Row::TopProcess{c.top[0].comm, c.top[0].cpu_pct};
      }
    }
  }
}

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
  std::vector<double> latency_medians;  // small-file samples' median latency, µs
  std::vector<double> in_flight_means;  // and the operations they kept in flight
  std::map<std::string, CpuAcc> cpu;    // per end
};

}  // namespace

std::string protocol_name(const std::string& layer) { return transfer::protocol_display(layer); }

const char* unit_name(RowUnit u) { return u == RowUnit::kOps ? "ops/s" : "bytes/s"; }

bool is_protocol(const std::string& layer) {
  return layer != "disk" && layer != "tcp" && layer != "link" && layer != "files";
}

bool is_protocol_row(const Row& r) { return is_protocol(r.layer) && !is_size_scan(r); }

std::string layer_name(const Row& r) {
  if (r.layer == "disk") return r.where + " disk";
  if (r.layer == "files" && !r.driver.empty()) return r.driver + " small files";
  if (r.layer == "files") return r.where + " disk's small files";
  return r.layer;
}

Cited cite(const Row& r, CitedName named) {
  Cited c;
  static_cast<RowIdentity&>(c) = r;
  c.key = r.key;
  c.n = r.rate.n;
  c.median = r.rate.median;
  c.min = r.rate.min;
  c.max = r.rate.max;
  c.named = named;
  return c;
}

bool is_size_scan(const Row& r) { return r.op.rfind("sweep-", 0) == 0; }

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
HostFacts::SambaConfig samba_config(const msg::SambaFacts& f) {
  HostFacts::SambaConfig c;
  c.known = f.error.empty();  // a config that could not be read tells no parameter
  c.config_path = f.config_path;
  if (!c.known) return c;
  for (const msg::NamedValue& v : f.global) {
    if (v.value) c.global[v.name] = *v.value;
  }
  for (const auto& [share, values] : f.shares) {
    for (const msg::NamedValue& v : values) {
      if (v.value) c.shares[share][v.name] = *v.value;
    }
  }
  return c;
}

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
    h.disk_bus = disk_bus_of(*f.disk_dir->device);
  }
  for (const msg::NamedValue& v : f.tcp_sysctls) {
    if (v.value) h.tcp_sysctls[v.name] = *v.value;
  }
  // A config that could not be read tells no parameter.
  if (f.samba) h.samba = samba_config(*f.samba);
  for (const msg::SambaFacts& s : f.samba_instances) {
    if (s.pid > 0) h.samba_instances[s.pid] = samba_config(s);
  }
  for (const msg::ServerConfigFacts& sc : f.file_servers) {
    if (!sc.error.empty()) continue;  // an unreadable config tells no setting
    std::map<std::string, std::string> settings;
    for (const msg::NamedValue& v : sc.settings) {
      if (v.value) settings[v.name] = *v.value;
    }
    if (sc.pid > 0) h.server_instances[sc.pid] = {sc.server, settings};
    h.server_configs.try_emplace(sc.server, std::move(settings));  // the first is the default
  }
  return h;
}

}  // namespace

const HostFacts::SambaConfig& HostFacts::samba_serving(int server_pid) const {
  auto it = server_pid > 0 ? samba_instances.find(server_pid) : samba_instances.end();
  return it != samba_instances.end() ? it->second : samba;
}

void detect_link(const stored::Run& run, Analysis& a) {
  const double planned = run.planned_link_bits;
  if (planned > 0) {
    a.link_bits = planned;
    a.link_source = {"plan", "", ""};
  }
  for (const auto& h : run.hosts) {
    const HostFacts facts = read_host_facts(h.facts ? *h.facts : msg::Facts{});
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
      a.link_source = {shaped > 0 ? "shaper" : "interface", ifname, h.role};
    }
  }
}

// The row of `layer` over `medium` for `op` with files of `size`, else the
// nearest size (by ratio); size 0: the biggest files.
const Row* proto_row(const std::vector<Row>& rows, const std::string& layer,
                     const std::string& medium, const std::string& op, uint64_t size) {
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

namespace {

// A protocol over RAM is held against TCP in its direction; over disk,
// against the lower of the same protocol over RAM and the server's disk, at
// the same file size (or the nearest one measured).
const Row* beneath_protocol(const std::vector<Row>& rows, const Row& r) {
  if (r.where == "ram") return tcp_beneath(rows, r);
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

// A sample's row: its key ("disk:server:read:100000000", "tcp:server->client:send[:N]",
// "smb:ram:read:100000000") and what the row measures (`proto`; report/row_text.h names it).
std::string row_of(const stored::Stage& st, const stored::Sample& s, Row& proto) {
  std::string key;
  proto.layer = st.driver;
  proto.where = st.where;
  proto.op = s.op;
  if (st.kind == stored::StageKind::kDisk) {
    key = fmt::format("disk:{}:{}:{}", st.where, s.op, s.size);
    proto.size = s.size;
  } else if (st.kind == stored::StageKind::kFiles) {
    // Small files on an end's disk (op "files-create" ..), in ops/s: a row per
    // phase, order and file size ("files:server:create:4096", the random
    // pass's "files:server:random-create:4096").
    // Over a share: "files:smb:disk:create:4096", the protocol and medium.
    const auto* fd = s.details.as<msg::FilesDetails>();
    const std::string phase = s.op.rfind("files-", 0) == 0 ? s.op.substr(6) : s.op;
    const bool random = fd && fd->order == "random";
    const std::string op = random ? "random-" + phase : phase;
    const std::string driver = fd ? fd->driver : "";
    proto.layer = "files";
    proto.driver = driver;
    proto.op = op;
    proto.size = s.size;
    proto.unit = RowUnit::kOps;
    if (driver.empty()) {
      key = fmt::format("files:{}:{}:{}", st.where, op, s.size);
    } else {
      key = fmt::format("files:{}:{}:{}:{}", driver, st.where, op, s.size);
    }
  } else if (st.kind == stored::StageKind::kTcp) {
    // Several streams at once: a row per count, the figure their total.
    const auto* td = s.details.as<msg::TcpDetails>();
    const size_t n = td ? td->streams.size() : 0;
    proto.streams = n > 1 ? static_cast<int>(n) : 1;
    key = n > 1 ? fmt::format("tcp:{}:{}:{}", st.where, s.op, n)
                : fmt::format("tcp:{}:{}", st.where, s.op);
    proto.below = "link";
  } else {
    // A protocol over a RAM or disk share.
    key = fmt::format("{}:{}:{}:{}", st.driver, st.where, s.op, s.size);
    proto.size = s.size;
  }
  return key;
}

// A sample's figure in its row's unit: bytes/s, or a small-file phase's
// operations/s (its details' ops over its seconds).
double figure_of(const stored::Sample& s, RowUnit unit) {
  if (unit == RowUnit::kBytes) return s.rate();
  const auto* fd = s.details.as<msg::FilesDetails>();
  return fd && s.seconds > 0 ? double(fd->ops) / s.seconds : 0;
}

}  // namespace

std::vector<Row> build_rows(const stored::Run& run, const Analysis& a) {
  std::map<std::string, Accum> acc;
  std::vector<std::string> order;
  for (const auto& st : run.stages) {
    for (const auto& s : st.samples) {
      Row proto;
      const std::string key = row_of(st, s, proto);
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
      ac.row.samples.push_back(figure_of(s, ac.row.unit));
      ac.row.sample_ids.push_back(s.id);
      // The agent's reason for the row's first sample a cache may have served.
      const bool want_why = s.cache_possible && ac.row.cache_possible_why.empty();
      if (s.cache_possible) ac.row.cache_possible++;
      if (want_why) {
        if (const auto* d = s.details.as<msg::DiskDetails>()) {
          ac.row.cache_possible_why = d->cache_reason;
        }
        if (const auto* d = s.details.as<msg::FilesDetails>()) {
          ac.row.cache_possible_why = d->cache_reason;
        }
      }
      if (const auto* d = s.details.as<msg::FilesDetails>()) {
        ac.in_flight_means.push_back(d->in_flight_mean);
        ac.latency_medians.push_back(d->latency_us.median_us);
        ac.row.latency_p99_us = std::max(ac.row.latency_p99_us, d->latency_us.p99_us);
        ac.row.latency_max_us = std::max(ac.row.latency_max_us, d->latency_us.max_us);
        ac.row.round_trips = std::max(ac.row.round_trips, d->round_trips);
        ac.row.serial_round_trips = std::max(ac.row.serial_round_trips, d->serial_round_trips);
      }
      if (s.cpu) {
        add_cpu(ac.row, *s.cpu);
        for (const auto& [host, c] : *s.cpu) ac.cpu[host].add(c);
      }
      // Protocol samples' details: the driver's properties and the share's
      // filesystem from the first, a cache reason where one is wanted.
      if (const auto* td = s.details.as<msg::TransferDetails>()) {
        if (want_why) ac.row.cache_possible_why = td->cache_reason;
        if (ac.row.properties.empty()) {
          ac.row.properties = td->properties;
          ac.row.server_fs = td->server_fs;
          ac.row.server_disk = td->server_disk;
        }
      }
      if (const auto* td = s.details.as<msg::TcpDetails>()) {
        const msg::TcpInfo& t = td->tcp_info;
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
    link.link = a.link_source;
    link.rate.median = link.rate.min = link.rate.max = a.link_bits / 8;
    rows.push_back(link);
  }
  for (const auto& key : order) {
    Accum& ac = acc[key];
    ac.row.rate = summarize(ac.row.samples);
    if (!ac.rtts.empty()) ac.row.rtt_us = summarize(ac.rtts).median;
    if (!ac.in_flight_means.empty()) {
      ac.row.in_flight_mean = summarize(ac.in_flight_means).median;
    }
    if (!ac.latency_medians.empty()) {
      ac.row.latency_median_us = summarize(ac.latency_medians).median;
    }
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
    if (r.layer == "tcp" && r.where == where && r.streams == 1 && r.rate.n > 0) return &r;
  return nullptr;
}

}  // namespace cp::analysis
