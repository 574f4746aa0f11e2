#include "analysis/ladder.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>

#include "core/units.h"

namespace cp::analysis {
namespace {

namespace json = boost::json;

json::object parse_object(const std::string& text) {
  if (text.empty()) return {};
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

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
  json::object cpu = parse_object(cpu_json);
  for (const auto& [host, v] : cpu) {
    if (!v.is_object()) continue;
    // Busy fractions over a few milliseconds are noise (one 0.25 s tick);
    // only windows of at least half a second count as evidence.
    if (number(path(v.as_object(), {"seconds"})) < kMinCpuWindow) continue;
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

struct Accum {
  Row row;
  std::vector<double> rates;
  double busy_s = 0, rwnd_s = 0, sndbuf_s = 0;
  bool info = false;
};

}  // namespace

const Row* find_row(const Analysis& a, const std::string& key) {
  for (const auto& r : a.rows)
    if (r.key == key) return &r;
  return nullptr;
}

namespace {

void detect_link(const RunRecord& run, Analysis& a) {
  json::object plan = parse_object(run.plan_json);
  double planned = number(path(plan, {"link", "nominal_bits"}));
  if (planned > 0) {
    a.link_bits = planned;
    a.link_source = "set in the plan";
  }
  for (const auto& h : run.hosts) {
    json::object f = parse_object(h.facts_json);
    const int mtu = static_cast<int>(number(path(f, {"net", "mtu"})));
    (h.role == "server" ? a.server_mtu : a.client_mtu) = mtu;
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
    if (!is_protocol(r.layer) || r.rate.n == 0) continue;
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
        proto.label = fmt::format("{} {} {}, {} files", protocol_name(st.layer),
                                  st.where == "ram" ? "from RAM" : "from disk",
                                  s.op == "read" ? "read" : "write", format_size(s.size));
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
      ac.rates.push_back(s.rate());
      if (s.cache_possible) ac.row.cache_possible++;
      add_cpu(ac.row, s.cpu_json);
      if (st.layer == "tcp") {
        json::object d = parse_object(s.details_json);
        if (const auto* ti = path(d, {"tcp_info"}); ti && ti->is_object()) {
          const auto& t = ti->as_object();
          if (path(t, {"available"}) && path(t, {"available"})->is_bool() &&
              path(t, {"available"})->as_bool()) {
            ac.info = true;
            ac.busy_s += number(path(t, {"busy_s"}));
            ac.rwnd_s += number(path(t, {"rwnd_limited_s"}));
            ac.sndbuf_s += number(path(t, {"sndbuf_limited_s"}));
            ac.row.retransmits += static_cast<uint64_t>(number(path(t, {"retransmits"})));
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
    ac.row.rate = summarize(ac.rates);
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

// Why TCP is where it is, with the numbers: the layer name and a sentence.
std::pair<std::string, std::string> explain_tcp(const Row& t, const Analysis& a) {
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

  if (t.max_core_pct >= kCoreSaturated) {
    std::string s = fmt::format(
        "{} carries {}, and a core on the {} was {:.0f} % busy{}: CPU-bound on the {}", t.label,
        mbps(t.rate.median), t.max_core_host, t.max_core_pct,
        t.max_core_process.empty() ? "" : " (" + t.max_core_process + ")", t.max_core_host);
    if (t.ratio > 0) s += fmt::format(" ({} of the {} link)", pct(t.ratio), link_text(a));
    if (!because.empty()) s += "; " + because;
    return {"cpu", s};
  }
  if (t.ratio <= 0) {
    return {"tcp", fmt::format("{} carries {} (link speed unknown: set [link] nominal in the plan)",
                               t.label, mbps(t.rate.median)) +
                       (because.empty() ? "" : "; " + because)};
  }
  if (t.ratio > 1.05) {
    return {"tcp",
            fmt::format("{} carries {}, above the link's nominal {} ({}): that speed is not a real "
                        "ceiling here (a virtual link?)",
                        t.label, mbps(t.rate.median), link_text(a), pct(t.ratio))};
  }
  if (t.ratio >= kShortTcp) {
    return {"network", fmt::format("{} reaches {} of the {} link ({}): the network is at its "
                                   "ceiling",
                                   t.label, pct(t.ratio), link_text(a), mbps(t.rate.median)) +
                           (because.empty() ? "" : "; " + because)};
  }
  return {"tcp", fmt::format("{} reaches only {} of the {} link ({})", t.label, pct(t.ratio),
                             link_text(a), mbps(t.rate.median)) +
                     (because.empty() ? "; tcp_info shows no window or buffer limit, look at "
                                        "the path (switches, NICs, MTU)"
                                      : "; " + because)};
}

void path_verdict(Analysis& a, const std::string& name, const Row* src_disk, const Row* tcp,
                  const Row* dst_disk) {
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
  std::sort(layers.begin(), layers.end(),
            [](const Layer& x, const Layer& y) { return x.row->rate.median < y.row->rate.median; });
  const Layer& cap = layers.front();
  Finding f;
  f.path = name;
  std::string others;
  for (size_t i = 1; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    others +=
        fmt::format("{}{}{} {} {}", others.empty() ? "" : ", ", l.row->layer == "tcp" ? "" : "the ",
                    l.name, l.what, mbps(l.row->rate.median));
  }
  if (cap.row->layer == "tcp") {
    auto [layer, why] = explain_tcp(*cap.row, a);
    f.layer = layer;
    f.text = fmt::format("{}: the {} caps it. {}", name,
                         layer == "network" ? "network"
                         : layer == "cpu"   ? "CPU"
                                            : "TCP layer",
                         why);
  } else {
    f.layer = cap.name;
    f.text = fmt::format(
        "{}: the {} caps it: it {} {}{}", name, cap.name, cap.what, mbps(cap.row->rate.median),
        cap.row->size ? fmt::format(" ({} files)", format_size(cap.row->size)) : "");
    if (cap.row->max_core_pct >= kCoreSaturated) {
      f.text += fmt::format(" with a core on the {} {:.0f} % busy ({})", cap.row->max_core_host,
                            cap.row->max_core_pct, cap.row->max_core_process);
    }
  }
  if (!others.empty()) f.text += fmt::format("; {}", others);
  if (layers.size() > 1 && layers[1].row->rate.median > 0 &&
      cap.row->rate.median / layers[1].row->rate.median >= kAtCeiling) {
    f.text += fmt::format(" (the {} is within 10 %: both are near their ceiling)", layers[1].name);
  }
  f.text += ".";
  a.findings.push_back(f);
}

}  // namespace

std::string cpu_note(const Row& r) {
  if (r.max_core_pct < kCoreSaturated) return {};
  return fmt::format("; the {} is CPU-bound: a core at {:.0f} %{}", r.max_core_host, r.max_core_pct,
                     r.max_core_process.empty() ? "" : " (" + r.max_core_process + ")");
}

// The verdict for one protocol row (its biggest files), e.g. "SMB from RAM
// read 50 MB/s = 43 % of TCP (117 MB/s): the SMB layer caps it".
void protocol_verdict(Analysis& a, const Row& r) {
  const std::string proto = protocol_name(r.layer);
  const std::string what =
      fmt::format("{} {} {}", proto, r.where == "ram" ? "from RAM" : "from disk", r.op);
  const std::string path = fmt::format("{} {} {}", r.layer, r.where, r.op);
  const Row* b = nullptr;
  for (const auto& x : a.rows)
    if (x.key == r.below) b = &x;
  Finding f;
  f.path = path;
  if (!b) {
    f.layer = r.layer;
    f.text = fmt::format("{}: {} moves {} (no layer beneath was measured to hold it against){}.",
                         path, what, mbps(r.rate.median), cpu_note(r));
    a.findings.push_back(f);
    return;
  }
  const std::string below_name = b->layer == "tcp" ? "TCP" : b->label;
  if (r.where == "ram") {
    if (r.ratio >= kAtCeiling) {
      auto [layer, why] = explain_tcp(*b, a);
      f.layer = layer;
      f.text = fmt::format(
          "{}: {} moves {} = {} of TCP ({}): the protocol is at TCP's ceiling, "
          "so the layer beneath caps it. {}",
          path, what, mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), why);
    } else {
      f.layer = r.max_core_pct >= kCoreSaturated ? r.layer + " (cpu)" : r.layer;
      f.text =
          fmt::format("{}: {} moves {} = {} of TCP ({}): the {} layer caps it{}", path, what,
                      mbps(r.rate.median), pct(r.ratio), mbps(b->rate.median), proto, cpu_note(r));
      if (r.layer == "smb") {
        f.text += fmt::format(
            "; for SMB2/3 try raising `smb2 max read`/`smb2 max write` and `aio read size` "
            "(`max xmit` only affects SMB1)");
      }
    }
    f.text += ".";
    a.findings.push_back(f);
    return;
  }
  // From disk: against min(protocol over RAM, server disk).
  const Row* ram = proto_row(a.rows, r.layer, "ram", r.op);
  const Row* disk = disk_row(a.rows, "server", r.op);
  std::string context;
  if (ram) context += fmt::format("{} from RAM moves {}", proto, mbps(ram->rate.median));
  if (disk) {
    context += fmt::format("{}the server disk {} {}", context.empty() ? "" : ", ",
                           r.op == "read" ? "reads" : "writes", mbps(disk->rate.median));
  }
  if (r.ratio >= kAtCeiling) {
    if (b->layer == "disk") {
      f.layer = "server disk";
      f.text = fmt::format("{}: {} moves {} = {} of the server disk: the server disk caps it ({})",
                           path, what, mbps(r.rate.median), pct(r.ratio), context);
      if (r.op == "read") {
        f.text += "; for reads, raise the readahead (`blockdev --setra 4096 DEV`, `hdparm -a`)";
      }
    } else {
      f.layer = r.layer;
      f.text = fmt::format(
          "{}: {} moves {} = {} of {} from RAM: the {} layer caps it, as over RAM "
          "({})",
          path, what, mbps(r.rate.median), pct(r.ratio), proto, proto, context);
    }
  } else {
    f.layer = r.layer + " + disk";
    f.text = fmt::format(
        "{}: {} moves {}, only {} of {} ({}): reading and serving together cost "
        "more than either layer alone{}",
        path, what, mbps(r.rate.median), pct(r.ratio), below_name, context, cpu_note(r));
    if (r.op == "read") f.text += "; a larger readahead (`blockdev --setra`) often helps";
  }
  f.text += ".";
  a.findings.push_back(f);
}

Analysis analyze(const RunRecord& run) {
  Analysis a;
  detect_link(run, a);
  a.rows = build_rows(run, a);

  path_verdict(a, "server -> client", disk_row(a.rows, "server", "read"),
               tcp_row(a.rows, "server->client"), disk_row(a.rows, "client", "write"));
  path_verdict(a, "client -> server", disk_row(a.rows, "client", "read"),
               tcp_row(a.rows, "client->server"), disk_row(a.rows, "server", "write"));

  // TCP against the link, where no path verdict already said it.
  std::vector<std::string> explained;
  for (const auto& f : a.findings) explained.push_back(f.text);
  for (const auto& r : a.rows) {
    if (r.layer != "tcp" || r.rate.n == 0) continue;
    bool said = false;
    for (const auto& t : explained)
      said |=
          t.find(r.label + " ") != std::string::npos && t.find("caps it. ") != std::string::npos;
    if (said) continue;
    auto [layer, why] = explain_tcp(r, a);
    a.findings.push_back({"tcp", layer, why + "."});
  }
  // Numbers that may not be what they seem.
  for (const auto& r : a.rows) {
    if (r.cache_possible > 0) {
      a.findings.push_back(
          {"cache", "cache",
           fmt::format("cache suspected: {} of {} samples of {} ran without O_DIRECT (the "
                       "filesystem refused it), so the page cache may have served them.",
                       r.cache_possible, r.rate.n, r.label)});
    }
    if (r.failed > 0) {
      a.findings.push_back({"errors", "error",
                            fmt::format("{} of {} samples of {} failed; the figures use the rest.",
                                        r.failed, r.failed + r.rate.n, r.label)});
    }
  }
  if (a.server_mtu > 0 && a.client_mtu > 0 && a.server_mtu != a.client_mtu) {
    a.findings.push_back({"mtu", "network",
                          fmt::format("MTU mismatch on the data path: server {} vs client {}.",
                                      a.server_mtu, a.client_mtu)});
  }
  // Protocol rows: the biggest files of each protocol, medium and op.
  for (const auto& r : a.rows) {
    if (is_protocol(r.layer) && r.rate.n > 0 && proto_row(a.rows, r.layer, r.where, r.op) == &r) {
      protocol_verdict(a, r);
    }
  }
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
