#include "analysis/ladder.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "core/json_util.h"
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

std::string text(const json::value* v) {
  return (v && v->is_string()) ? std::string(v->as_string()) : std::string();
}

std::string pct(double ratio) { return fmt::format("{:.0f} %", ratio * 100); }

std::string mbps(double bps) { return format_mbps(bps); }

std::string where_label(const std::string& where) {
  if (where == "server->client") return "server -> client";
  if (where == "client->server") return "client -> server";
  return where;
}

// Folds one sample's CPU summaries ({"server":{...},"client":{...}}) into the row.
void add_cpu(Row& row, const std::string& cpu_json) {
  json::object cpu = parse_json_object(cpu_json);
  for (const auto& [host, v] : cpu) {
    if (!v.is_object()) continue;
    // Busy fractions over a few milliseconds are noise (one 0.25 s tick);
    // only windows of at least half a second count as evidence.
    if (number(path(v.as_object(), {"seconds"})) < kMinCpuWindow) continue;
    if (const auto* top = path(v.as_object(), {"top"}); top && top->is_array()) {
      for (const auto& e : top->as_array()) {
        if (!e.is_object()) continue;
        const auto& p = e.as_object();
        const double used = number(path(p, {"cpu_pct"}));
        const double limit = number(path(p, {"cpu_limit_pct"}));
        if (limit <= 0 || used < kQuotaSaturated * limit) continue;
        const auto* other = path(p, {"other_netns"});
        const bool foreign = other && other->is_bool() && other->as_bool();
        const bool better = row.quota_host.empty() || (row.quota_other_netns && !foreign) ||
                            (row.quota_other_netns == foreign &&
                             used / limit > row.quota_cpu_pct / row.quota_limit_pct);
        if (!better) continue;
        row.quota_host = host;
        row.quota_process = text(path(p, {"comm"}));
        row.quota_cpu_pct = used;
        row.quota_limit_pct = limit;
        row.quota_other_netns = foreign;
      }
    }
    const auto* cores = path(v.as_object(), {"core_busy_pct"});
    if (!cores || !cores->is_array()) continue;
    for (const auto& c : cores->as_array()) {
      double busy = number(&c);
      if (busy > row.max_core_pct) {
        row.max_core_pct = busy;
        row.max_core_host = host;
        const auto* top = path(v.as_object(), {"top"});
        row.max_core_process.clear();
        if (top && top->is_array() && !top->as_array().empty() && top->as_array()[0].is_object()) {
          const auto& p = top->as_array()[0].as_object();
          row.max_core_process =
              fmt::format("{} at {:.0f} %", text(path(p, {"comm"})), number(path(p, {"cpu_pct"})));
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

struct Accum {
  Row row;
  double busy_s = 0, rwnd_s = 0, sndbuf_s = 0;
  bool info = false;
  std::vector<double> rtts;  // µs
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

HostFacts read_host_facts(const json::object& f) {
  HostFacts h;
  h.hostname = text(path(f, {"hostname"}));
  h.memory_bytes = static_cast<uint64_t>(number(path(f, {"memory_bytes"})));
  h.mtu = static_cast<int>(number(path(f, {"net", "mtu"})));
  h.disk_device = text(path(f, {"disk_dir", "device", "disk"}));
  if (const auto* ra = path(f, {"disk_dir", "device", "read_ahead_kb"});
      ra && (ra->is_int64() || ra->is_uint64())) {
    h.read_ahead_kb = static_cast<int64_t>(number(ra));
  }
  if (const auto* t = path(f, {"tcp_sysctls"}); t && t->is_object()) {
    for (const auto& [k, v] : t->as_object())
      if (v.is_string()) h.tcp_sysctls[k] = std::string(v.as_string());
  }
  if (const auto* g = path(f, {"samba", "global"}); g && g->is_object()) {
    h.samba_known = true;
    for (const auto& [k, v] : g->as_object())
      if (v.is_string()) h.samba[k] = std::string(v.as_string());
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
    json::object f = parse_json_object(h.facts_json);
    const int mtu = static_cast<int>(number(path(f, {"net", "mtu"})));
    (h.role == "server" ? a.server_mtu : a.client_mtu) = mtu;
    (h.role == "server" ? a.server : a.client) = read_host_facts(f);
    if (planned > 0) continue;
    const std::string ifname = text(path(f, {"net", "name"}));
    double shaped = number(path(f, {"net", "shaped_rate_bit"}));
    double speed = number(path(f, {"net", "speed_mbit"})) * 1e6;
    double bits = shaped > 0 ? shaped : speed;
    if (bits <= 0) continue;
    if (a.link_bits == 0 || bits < a.link_bits) {
      a.link_bits = bits;
      a.link_source = shaped > 0 ? fmt::format("tc rate on {} ({})", ifname, h.role)
                                 : fmt::format("link speed of {} ({})", ifname, h.role);
    }
  }
}

const Row* disk_row(const std::vector<Row>& rows, const std::string& where, const std::string& op);
const Row* tcp_row(const std::vector<Row>& rows, const std::string& where);

// The row of `layer` over `medium` for `op` with the biggest files.
const Row* proto_row(const std::vector<Row>& rows, const std::string& layer,
                     const std::string& medium, const std::string& op) {
  const Row* best = nullptr;
  for (const auto& r : rows) {
    if (r.layer == layer && r.where == medium && r.op == op && r.rate.n > 0 &&
        (!best || r.size > best->size)) {
      best = &r;
    }
  }
  return best;
}

// A protocol over RAM is held against TCP in its direction; over disk,
// against the lower of the same protocol over RAM and the server's disk.
const Row* beneath_protocol(const std::vector<Row>& rows, const Row& r) {
  const bool read = r.op == "read";
  if (r.where == "ram") return tcp_row(rows, read ? "server->client" : "client->server");
  const Row* ram = proto_row(rows, r.layer, "ram", r.op);
  const Row* disk = disk_row(rows, "server", r.op);
  if (ram && disk) return ram->rate.median <= disk->rate.median ? ram : disk;
  return ram ? ram : disk;
}

void link_protocol_rows(std::vector<Row>& rows) {
  for (auto& r : rows) {
    if (!is_protocol_row(r) || r.rate.n == 0) continue;
    if (const Row* b = beneath_protocol(rows, r); b && b->rate.median > 0) {
      r.below = b->key;
      r.ratio = r.rate.median / b->rate.median;
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
      if (s.cache_possible) ac.row.cache_possible++;
      add_cpu(ac.row, s.cpu_json);
      json::object d = parse_json_object(s.details_json);
      if (const auto* p = path(d, {"properties"});
          p && p->is_object() && ac.row.properties.empty()) {
        for (const auto& [k, v] : p->as_object())
          if (v.is_string()) ac.row.properties[k] = std::string(v.as_string());
      }
      if (st.layer == "tcp") {
        if (const auto* ti = path(d, {"tcp_info"}); ti && ti->is_object()) {
          const auto& t = ti->as_object();
          if (path(t, {"available"}) && path(t, {"available"})->is_bool() &&
              path(t, {"available"})->as_bool()) {
            ac.info = true;
            ac.busy_s += number(path(t, {"busy_s"}));
            ac.rwnd_s += number(path(t, {"rwnd_limited_s"}));
            ac.sndbuf_s += number(path(t, {"sndbuf_limited_s"}));
            ac.row.retransmits += static_cast<uint64_t>(number(path(t, {"retransmits"})));
            if (double rtt = number(path(t, {"rtt_us"})); rtt > 0) ac.rtts.push_back(rtt);
          }
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
    if (ac.info && ac.busy_s > 0) {
      ac.row.rwnd_limited_frac = std::min(1.0, ac.rwnd_s / ac.busy_s);
      ac.row.sndbuf_limited_frac = std::min(1.0, ac.sndbuf_s / ac.busy_s);
    }
    if (ac.row.below == "link" && a.link_bits > 0 && ac.row.rate.n > 0) {
      ac.row.ratio = ac.row.rate.median / (a.link_bits / 8);
    } else {
      ac.row.below.clear();
    }
    rows.push_back(ac.row);
  }
  link_protocol_rows(rows);
  return rows;
}

// The disk row of `where`/`op` with the biggest files (the sustained figure).
const Row* disk_row(const std::vector<Row>& rows, const std::string& where, const std::string& op) {
  const Row* best = nullptr;
  for (const auto& r : rows) {
    if (r.layer == "disk" && r.where == where && r.op == op && r.rate.n > 0 &&
        (!best || r.size > best->size)) {
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

std::string link_text(const Analysis& a) { return format_rate_bits(a.link_bits); }

// "CPU-bound on the server: smbd at 100 % (a core 100 % busy)", or for a
// process at its cgroup's limit "CPU-bound on the server: smbd at 20 % of a
// core, 100 % of its CPU quota (20 %)" (the more specific, so it comes first).
std::string cpu_bound(const Row& r) {
  if (!r.quota_host.empty()) {
    return fmt::format(
        "CPU-bound on the {}: {} at {:.0f} % of a core, {:.0f} % of its CPU quota "
        "({:.0f} %)",
        r.quota_host, r.quota_process.empty() ? "a process" : r.quota_process, r.quota_cpu_pct,
        100 * r.quota_cpu_pct / r.quota_limit_pct, r.quota_limit_pct);
  }
  if (r.max_core_process.empty()) {
    return fmt::format("CPU-bound on the {}: a core {:.0f} % busy", r.max_core_host,
                       r.max_core_pct);
  }
  return fmt::format("CPU-bound on the {}: {} (a core {:.0f} % busy)", r.max_core_host,
                     r.max_core_process, r.max_core_pct);
}

bool saturated(const Row& r) { return r.max_core_pct >= kCoreSaturated || !r.quota_host.empty(); }

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

// The readahead hint for a disk under a read path, citing its rate and the
// current readahead; "" when the readahead is already large, and a note
// instead: where the disk caps the path (`disk_caps`), the disk itself is the
// limit; where reading and serving together do, more readahead would not help.
std::string readahead_hint(const Analysis& a, const std::string& role, double rate, bool disk_caps,
                           std::string* note) {
  const HostFacts& h = host_facts(a, role);
  const std::string dev = h.disk_device.empty() ? "DEV" : "/dev/" + h.disk_device;
  if (h.read_ahead_kb >= static_cast<int64_t>(kGoodReadaheadKb)) {
    *note = fmt::format("the {}'s readahead is already {} KiB on {}: {}", role, h.read_ahead_kb,
                        h.disk_device,
                        disk_caps ? "the disk itself is the limit" : "more would not help");
    return {};
  }
  std::string now = h.read_ahead_kb >= 0
                        ? fmt::format(" (now {} KiB on {})", h.read_ahead_kb,
                                      h.disk_device.empty() ? "its disk" : h.disk_device)
                        : "";
  // blockdev counts 512-byte sectors: 4096 = 2 MiB.
  return fmt::format(
      "the {} disk reads {}: raise its readahead{} with `blockdev --setra 4096 {}` (2 MiB) or "
      "`hdparm -a 4096 {}`",
      role, mbps(rate), now, dev, dev);
}

struct TcpExplanation {
  std::string layer;  // "cpu" | "network" | "tcp"
  std::string text;
  std::vector<std::string> hints;
};

// Hints for a TCP that falls short of the link, each citing its trigger.
std::vector<std::string> short_tcp_hints(const Row& t, const Analysis& a) {
  std::vector<std::string> hints;
  const bool down = t.where == "server->client";
  const std::string sender = down ? "server" : "client", receiver = down ? "client" : "server";
  const HostFacts& rf = host_facts(a, receiver);
  const HostFacts& sf = host_facts(a, sender);
  auto sysctl = [](const HostFacts& h, const char* key) {
    auto it = h.tcp_sysctls.find(key);
    return it == h.tcp_sysctls.end() ? std::string() : it->second;
  };
  // The window needed to fill the link: bandwidth x round-trip time.
  const double bdp = a.link_bits > 0 && t.rtt_us > 0 ? a.link_bits / 8 * t.rtt_us / 1e6 : 0;
  const uint64_t rmem = max_of_sysctl(sysctl(rf, "net.ipv4.tcp_rmem"));
  const bool rmem_short = bdp > 0 && rmem > 0 && double(rmem) < bdp;
  if (t.rwnd_limited_frac > kWindowLimited || rmem_short) {
    std::string why =
        t.rwnd_limited_frac > kWindowLimited
            ? fmt::format("receive-window-limited {}", pct(t.rwnd_limited_frac))
            : fmt::format(
                  "the {}'s tcp_rmem max {} bytes is below the "
                  "bandwidth-delay product {} bytes ({} x {:.2f} ms RTT)",
                  receiver, rmem, static_cast<uint64_t>(bdp), link_text(a), t.rtt_us / 1000);
    std::string now;
    if (!sysctl(rf, "net.ipv4.tcp_rmem").empty()) {
      now = fmt::format(" (now net.ipv4.tcp_rmem = \"{}\", net.core.rmem_max = {})",
                        sysctl(rf, "net.ipv4.tcp_rmem"), sysctl(rf, "net.core.rmem_max"));
    }
    hints.push_back(fmt::format("{}: raise the {}'s receive buffer max{}", why, receiver, now));
  }
  if (t.sndbuf_limited_frac > kWindowLimited) {
    std::string now;
    if (!sysctl(sf, "net.ipv4.tcp_wmem").empty()) {
      now = fmt::format(" (now net.ipv4.tcp_wmem = \"{}\", net.core.wmem_max = {})",
                        sysctl(sf, "net.ipv4.tcp_wmem"), sysctl(sf, "net.core.wmem_max"));
    }
    hints.push_back(fmt::format("send-buffer-limited {}: raise the {}'s send buffer max{}",
                                pct(t.sndbuf_limited_frac), sender, now));
  }
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    hints.push_back(fmt::format(
        "MTU {} on the server but {} on the client: set the same MTU on both ends and every "
        "switch between them",
        a.server_mtu, a.client_mtu));
  } else if (a.server_mtu == 1500 && a.client_mtu == 1500 && hints.empty()) {
    // Seed 004: jumbo frames lifted a short gigabit TCP from 133 to ~300 Mbit/s.
    hints.push_back(
        "MTU is 1500 on both ends: try jumbo frames (MTU 9000 on both ends and every switch "
        "between them)");
  }
  return hints;
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
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    why.push_back(fmt::format("MTU differs: server {} vs client {}", a.server_mtu, a.client_mtu));
  }
  std::string because;
  for (size_t i = 0; i < why.size(); ++i) because += (i ? "; " : "") + why[i];

  if (saturated(t)) {
    std::string s =
        fmt::format("{} carries {} while {}", t.label, mbps(t.rate.median), cpu_bound(t));
    if (t.ratio > 0) s += fmt::format(" ({} of the {} link)", pct(t.ratio), link_text(a));
    if (!because.empty()) s += "; " + because;
    return {"cpu", s, {}};
  }
  if (t.ratio <= 0) {
    return {"tcp",
            fmt::format("{} carries {} (link speed unknown: set [link] nominal in the plan)",
                        t.label, mbps(t.rate.median)) +
                (because.empty() ? "" : "; " + because),
            {}};
  }
  if (t.ratio > kAboveLink) {
    return {"tcp",
            fmt::format("{} carries {}, above the link's nominal {} ({}): that speed is not a real "
                        "ceiling here (a virtual link?)",
                        t.label, mbps(t.rate.median), link_text(a), pct(t.ratio)),
            {}};
  }
  if (t.ratio >= kShortTcp) {
    return {"network",
            fmt::format("{} reaches {} of the {} link ({}): the network is at its ceiling", t.label,
                        pct(t.ratio), link_text(a), mbps(t.rate.median)) +
                (because.empty() ? "" : "; " + because),
            {}};
  }
  return {"tcp",
          fmt::format("{} reaches only {} of the {} link ({})", t.label, pct(t.ratio), link_text(a),
                      mbps(t.rate.median)) +
              (because.empty() ? "; tcp_info shows no window or buffer limit, look at "
                                 "the path (switches, NICs, MTU)"
                               : "; " + because),
          short_tcp_hints(t, a)};
}

// The row that stands for the capping layer of a TCP explanation: the link
// when the network is at its ceiling, else the TCP row.
std::string tcp_cap_key(const Analysis& a, const Row& t, const std::string& layer) {
  return layer == "network" && find_row(a, "link") ? "link" : t.key;
}

// Row keys that a finding already explained (TCP) or named CPU-bound.
struct Said {
  std::set<std::string> tcp, cpu;
};

void path_verdict(Analysis& a, Said& said, const std::string& name, const Row* src_disk,
                  const Row* tcp, const Row* dst_disk) {
  struct Layer {
    const Row* row;
    std::string name;  // "server disk", ...
    std::string what;  // "reads", ...
  };
  std::vector<Layer> layers;
  if (src_disk) layers.push_back({src_disk, src_disk->where + " disk", "reads"});
  if (tcp) layers.push_back({tcp, "TCP", "carries"});
  if (dst_disk) layers.push_back({dst_disk, dst_disk->where + " disk", "writes"});
  if (layers.empty()) return;
  Finding f;
  f.path = name;
  for (const auto& l : layers) {
    if (l.row->layer == "tcp" && find_row(a, "link")) f.rows.push_back("link");
    f.rows.push_back(l.row->key);
  }
  std::sort(layers.begin(), layers.end(),
            [](const Layer& x, const Layer& y) { return x.row->rate.median < y.row->rate.median; });
  const Layer& cap = layers.front();
  std::string others;
  for (size_t i = 1; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    others +=
        fmt::format("{}{}{} {} {}", others.empty() ? "" : ", ", l.row->layer == "tcp" ? "" : "the ",
                    l.name, l.what, mbps(l.row->rate.median));
  }
  std::vector<std::string> hints;
  std::string note;
  if (cap.row->layer == "tcp") {
    TcpExplanation e = explain_tcp(*cap.row, a);
    said.tcp.insert(cap.row->key);
    if (e.layer == "cpu") said.cpu.insert(cap.row->key);
    f.layer = e.layer;
    f.cap = tcp_cap_key(a, *cap.row, e.layer);
    f.ratio = cap.row->ratio;
    f.text = fmt::format("{}: the {} caps it. {}", name,
                         e.layer == "network" ? "network"
                         : e.layer == "cpu"   ? "CPU"
                                              : "TCP layer",
                         e.text);
    hints = e.hints;
  } else {
    f.layer = cap.name;
    f.cap = cap.row->key;
    f.text = fmt::format(
        "{}: the {} caps it: it {} {}{}", name, cap.name, cap.what, mbps(cap.row->rate.median),
        cap.row->size ? fmt::format(" ({} files)", format_size(cap.row->size)) : "");
    if (saturated(*cap.row)) {
      f.text += "; " + cpu_bound(*cap.row);
      said.cpu.insert(cap.row->key);
    }
    if (cap.row->op == "read") {
      std::string h =
          readahead_hint(a, cap.row->where, cap.row->rate.median, /*disk_caps=*/true, &note);
      if (!h.empty()) hints.push_back(h);
    }
  }
  if (layers.size() > 1 && layers[1].row->rate.median > 0) {
    if (f.ratio == 0) f.ratio = cap.row->rate.median / layers[1].row->rate.median;
  }
  if (!others.empty()) f.text += fmt::format("; {}", others);
  if (layers.size() > 1 && layers[1].row->rate.median > 0 &&
      cap.row->rate.median / layers[1].row->rate.median >= kAtCeiling) {
    f.text += fmt::format(" (the {} is within 10 %: both are near their ceiling)", layers[1].name);
  }
  if (!note.empty()) f.text += "; " + note;
  for (auto& h : hints) add_hint(f, h);
  f.text += ".";
  a.findings.push_back(f);
}

std::string cpu_note(const Row& r) { return saturated(r) ? "; " + cpu_bound(r) : std::string(); }

// The SMB2/3 tuning hint for an SMB row short of TCP, citing the ratio, the
// server's config values and the client's request size.
std::string smb_hint(const Analysis& a, const Row& r) {
  const bool read = r.op == "read";
  const std::string max_param = read ? "smb2 max read" : "smb2 max write";
  const std::string aio_param = read ? "aio read size" : "aio write size";
  auto cfg = [&](const std::string& p) {
    auto it = a.server.samba.find(p);
    return it == a.server.samba.end() ? std::string("default") : it->second;
  };
  std::string h = fmt::format("at {} of TCP, for SMB2/3 raise `{}` and `{}`", pct(r.ratio),
                              max_param, aio_param);
  if (a.server.samba_known) {
    h += fmt::format(" (server config: {} = {}, {} = {})", max_param, cfg(max_param), aio_param,
                     cfg(aio_param));
  }
  h += " (`max xmit` only affects SMB1";
  if (a.server.samba.count("max xmit")) {
    h += fmt::format(": this config's max xmit = {} does nothing here",
                     a.server.samba.at("max xmit"));
  }
  h += ")";
  auto io = r.properties.find(read ? "max_read_size" : "max_write_size");
  if (io != r.properties.end()) {
    const uint64_t bytes = max_of_sysctl(io->second);
    if (bytes > 0 && bytes < (1u << 20)) {
      h += fmt::format("; the client asked for {} per request: raise the share's io_size option",
                       format_size(bytes));
    }
  }
  return h;
}

// The verdict for one protocol row (its biggest files), e.g. "SMB from RAM
// read 50 MB/s = 43 % of TCP (117 MB/s): the SMB layer caps it".
void protocol_verdict(Analysis& a, Said& said, const Row& r) {
  const std::string proto = protocol_name(r.layer);
  const std::string what =
      fmt::format("{} {} {}", proto, r.where == "ram" ? "from RAM" : "from disk", r.op);
  const std::string path = fmt::format("{} {} {}", r.layer, r.where, r.op);
  const Row* b = find_row(a, r.below);
  Finding f;
  f.path = path;
  f.ratio = r.ratio;
  if (!b) {
    f.layer = r.layer;
    f.rows = {r.key};
    f.cap = r.key;
    f.text = fmt::format("{}: {} moves {} (no layer beneath was measured to hold it against){}.",
                         path, what, mbps(r.rate.median), cpu_note(r));
    if (saturated(r)) said.cpu.insert(r.key);
    a.findings.push_back(f);
    return;
  }
  const bool read = r.op == "read";
  const Row* tcp = tcp_row(a.rows, read ? "server->client" : "client->server");
  const Row* ram = proto_row(a.rows, r.layer, "ram", r.op);
  const Row* disk = disk_row(a.rows, "server", r.op);
  if (r.where == "disk" && disk) f.rows.push_back(disk->key);
  if (tcp && find_row(a, "link")) f.rows.push_back("link");
  if (tcp) f.rows.push_back(tcp->key);
  if (r.where == "disk" && ram) f.rows.push_back(ram->key);
  f.rows.push_back(r.key);
  const std::string below_name = b->layer == "tcp" ? "TCP" : b->label;
  if (r.where == "ram") {
    if (r.ratio >= kAtCeiling) {
      TcpExplanation e = explain_tcp(*b, a);
      f.layer = e.layer;
      f.cap = tcp_cap_key(a, *b, e.layer);
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}): the protocol is at TCP's ceiling, "
          "so the layer beneath caps it. {}",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), e.text);
      for (auto& h : e.hints) add_hint(f, h);
    } else {
      f.layer = saturated(r) ? r.layer + " (cpu)" : r.layer;
      f.cap = r.key;
      f.text =
          fmt::format("{}: {} moves {} = {} of TCP ({}): the {} layer caps it{}", path, what,
                      mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), proto, cpu_note(r));
      if (saturated(r)) said.cpu.insert(r.key);
      if (r.layer == "smb") add_hint(f, smb_hint(a, r));
    }
    f.text += ".";
    a.findings.push_back(f);
    return;
  }
  // From disk: against min(protocol over RAM, server disk).
  std::string context;
  if (ram) context += fmt::format("{} from RAM moves {}", proto, mbps(ram->rate.median));
  if (disk) {
    context += fmt::format("{}the server disk {} {}", context.empty() ? "" : ", ",
                           read ? "reads" : "writes", mbps(disk->rate.median));
  }
  std::string note;
  if (r.ratio >= kAtCeiling) {
    if (b->layer == "disk") {
      f.layer = "server disk";
      f.cap = b->key;
      f.text = fmt::format("{}: {} moves {} = {} of the server disk: the server disk caps it ({})",
                           path, what, mbps(r.rate.median), pct(r.ratio), context);
      if (read) {
        std::string h = readahead_hint(a, "server", b->rate.median, /*disk_caps=*/true, &note);
        if (!note.empty()) f.text += "; " + note;
        if (!h.empty()) add_hint(f, h);
      }
    } else if (tcp && ram && ram->ratio >= kAtCeiling) {
      // Over RAM the protocol already ran at TCP's ceiling: what caps RAM caps disk.
      TcpExplanation e = explain_tcp(*tcp, a);
      f.layer = e.layer;
      f.cap = tcp_cap_key(a, *tcp, e.layer);
      f.text = fmt::format(
          "{}: {} moves {} = {} of {} from RAM, which runs at TCP's ceiling ({}): the disk "
          "costs nothing here and the layer beneath caps it. {}",
          path, what, mbps(r.rate.median), pct(r.ratio), proto, context, e.text);
      for (auto& h : e.hints) add_hint(f, h);
    } else {
      f.layer = r.layer;
      f.cap = b->key;
      f.text = fmt::format(
          "{}: {} moves {} = {} of {} from RAM: the {} layer caps it, as over RAM "
          "({})",
          path, what, mbps(r.rate.median), pct(r.ratio), proto, proto, context);
    }
  } else {
    f.layer = r.layer + " + disk";
    f.cap = r.key;
    f.text = fmt::format(
        "{}: {} moves {}, only {} of {} ({}): reading and serving together cost "
        "more than either layer alone{}",
        path, what, mbps(r.rate.median), pct(r.ratio), below_name, context, cpu_note(r));
    if (saturated(r)) said.cpu.insert(r.key);
    if (read) {
      std::string h = readahead_hint(a, "server", disk ? disk->rate.median : r.rate.median,
                                     /*disk_caps=*/false, &note);
      if (!note.empty()) f.text += "; " + note;
      if (!h.empty()) add_hint(f, h);
    }
  }
  f.text += ".";
  a.findings.push_back(f);
}

// Marks rows whose figure a cache may have produced: samples without
// O_DIRECT on files that fit in RAM, and results faster than the layer
// beneath them. Adds a finding for each; rows too big for the page cache
// get a note instead.
void judge_cache(Analysis& a) {
  for (auto& r : a.rows) {
    if (r.rate.n == 0) continue;
    std::vector<std::string> reasons;
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
        reasons.push_back(fmt::format(
            "{} of {} samples of {} ran without O_DIRECT (the filesystem refused it){}, so the "
            "page cache may have served them",
            r.cache_possible, r.rate.n, r.label,
            mem > 0 ? fmt::format(" and the {} files fit in the {}'s {} of RAM",
                                  format_size(r.size), role, format_size(mem))
                    : ""));
      }
    }
    if (is_protocol_row(r) && r.where == "disk") {
      const Row* d = disk_row(a.rows, "server", r.op);
      if (d && d->rate.median > 0 && r.rate.median > d->rate.median * kFasterThanBeneath) {
        reasons.push_back(fmt::format(
            "{} moves {}, faster than the server disk {} ({}): {}", r.label, mbps(r.rate.median),
            r.op == "read" ? "reads" : "writes", mbps(d->rate.median),
            r.op == "read" ? "a page cache served part of it"
                           : "the server's page cache absorbed part of the writes (write-back)"));
      }
    } else if (is_protocol_row(r) && r.where == "ram") {
      const Row* t = find_row(a, r.below);
      if (t && r.ratio > kFasterThanBeneath) {
        reasons.push_back(fmt::format(
            "{} moves {}, faster than TCP carries ({}): a cache on the client served part of it",
            r.label, mbps(r.rate.median), mbps(t->rate.median)));
      }
    }
    if (reasons.empty()) continue;
    r.cache_suspected = true;
    for (size_t i = 0; i < reasons.size(); ++i) r.cache_reason += (i ? "; " : "") + reasons[i];
    a.findings.push_back(
        make_finding("cache", "cache", "cache suspected: " + r.cache_reason + ".", {r.key}));
  }
}

// A verdict resting on a figure a cache may have produced says so.
void flag_untrusted(Analysis& a) {
  for (auto& f : a.findings) {
    if (f.path == "cache" || f.text.empty() || f.text.back() != '.') continue;
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

}  // namespace

Analysis analyze(const RunRecord& run) {
  Analysis a;
  detect_link(run, a);
  a.rows = build_rows(run, a);
  Said said;

  path_verdict(a, said, "server -> client", disk_row(a.rows, "server", "read"),
               tcp_row(a.rows, "server->client"), disk_row(a.rows, "client", "write"));
  path_verdict(a, said, "client -> server", disk_row(a.rows, "client", "read"),
               tcp_row(a.rows, "client->server"), disk_row(a.rows, "server", "write"));

  // TCP against the link, where no path verdict already said it.
  for (const auto& r : a.rows) {
    if (r.layer != "tcp" || r.rate.n == 0 || said.tcp.count(r.key)) continue;
    TcpExplanation e = explain_tcp(r, a);
    if (e.layer == "cpu") said.cpu.insert(r.key);
    Finding f = make_finding("tcp", e.layer, e.text, {}, tcp_cap_key(a, r, e.layer));
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
  // A saturated core that no verdict named yet.
  for (const auto& r : a.rows) {
    if (r.layer == "link" || is_sweep(r) || r.rate.n == 0 || !saturated(r) ||
        said.cpu.count(r.key)) {
      continue;
    }
    a.findings.push_back(make_finding(
        "cpu", "cpu",
        fmt::format("{} moves {} while {}.", r.label, mbps(r.rate.median), cpu_bound(r)), {r.key},
        r.key));
  }
  // Numbers that may not be what they seem.
  judge_cache(a);
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
    a.findings.push_back(
        make_finding("mtu", "network",
                     fmt::format("MTU mismatch on the data path: server {} vs client {}.",
                                 a.server_mtu, a.client_mtu)));
  }
  for (auto& f : protocols) a.findings.push_back(std::move(f));
  flag_untrusted(a);
  // The headline answers the user's usual path: reading from the server's
  // disk through the protocol, else from its RAM, else disk/TCP.
  for (const char* want : {"disk read", "ram read"}) {
    for (const auto& f : a.findings) {
      if (a.headline.empty() && f.path.size() > std::strlen(want) &&
          f.path.compare(f.path.size() - std::strlen(want), std::string::npos, want) == 0) {
        a.headline = f.text;
      }
    }
  }
  for (const auto& f : a.findings) {
    if (a.headline.empty() && (f.path == "server -> client" || f.path == "client -> server")) {
      a.headline = f.text;
    }
  }
  if (a.headline.empty()) {
    a.headline = run.stages.empty() ? "No stage ran, so there is no verdict."
                                    : "No stage produced samples, so there is no verdict.";
  }
  return a;
}

}  // namespace cp::analysis
