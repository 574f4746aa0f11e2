// The protocol chains: each protocol's biggest files held against the layer
// beneath (TCP over RAM; over disk, the lower of the same protocol over RAM
// and the server disk), with the client's own limits, the path's latency, the
// load and the CPU weighed first.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/costly_settings.h"
#include "analysis/judge.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "transfer/driver.h"

namespace cp::analysis {

// What the protocol rules read of one protocol row.
struct ProtocolCase {
  const Row& r;
  const Row* b = nullptr;       // the layer beneath (nullptr: unmeasured)
  const Row* tcp = nullptr;     // TCP in its direction
  const Row* ram = nullptr;     // the same protocol over RAM, nearest size
  const Row* disk = nullptr;    // the server disk, nearest size
  Level level = Level::kBelow;  // against b
};

namespace {

// Values in the server's config worse than its defaults, for `op`: the
// settings the protocol's driver declares to cap one request
// (DriverSpec::hints.server_limits), read from the Samba config the host
// facts hold.
std::vector<Hint> server_misconfigured(const Analysis& a, const transfer::DriverSpec* spec,
                                       const Row& r) {
  std::vector<Hint> out;
  // The smbd that served the row's samples (several may run on the host).
  const HostFacts::SambaConfig& samba = a.server.samba_serving(r.server_pid);
  if (!spec || !samba.known) return out;
  for (const transfer::ServerLimit& limit : spec->hints.server_limits) {
    if (!limit.op.empty() && limit.op != r.op) continue;
    auto it = samba.global.find(std::string(limit.key));
    if (it == samba.global.end()) continue;
    const uint64_t v = max_of_sysctl(it->second);
    if (v > 0 && v < limit.server_default) {
      out.push_back(Hint{"server.request_limit",
                         {{"size", double(v)}, {"default_size", double(limit.server_default)}},
                         {{"key", std::string(limit.key)}, {"value", it->second}}});
    }
  }
  return out;
}

// The costly settings whose evidence fits (costly_settings.h): each in
// `settings`; those off their default in `misconfigured` too (request sizes
// keep samba_misconfigured's words), with the rows their evidence cites.
void name_costly_settings(const Analysis& a, const Row& r, Finding& f) {
  f.settings = settings_found(a, r, f);
  for (const SettingFound& s : f.settings) {
    if (s.parameter.rfind("smb2 max ", 0) == 0) continue;
    if (lower(s.value) == lower(s.default_value)) continue;
    Hint h{"server.costly_setting",
           {},
           {{"parameter", s.parameter},
            {"value", s.value},
            {"server", s.server},
            {"default", s.default_value},
            {"cost", s.cost},
            {"evidence", s.evidence.id}}};
    for (const auto& [k, v] : s.evidence.numbers) h.numbers["evidence." + k] = v;
    for (const auto& [k, v] : s.evidence.words) h.words["evidence." + k] = v;
    f.misconfigured.push_back(std::move(h));
  }
  const Row* sync = disk_row(a.rows, "server", "syncwrite", r.size);
  const bool cites_sync = std::any_of(f.settings.begin(), f.settings.end(), [](const auto& s) {
    return s.parameter == "sync always" || s.parameter == "strict sync";
  });
  if (sync && cites_sync) {
    f.rows.insert(f.rows.begin(), sync->key);
    f.context.push_back(cite(*sync, CitedName::kTheLayer));
  }
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

// A protocol row's own layer as a candidate: "smb", or "smb + disk" for a
// row from disk (the protocol and the server disk together).
std::string own_layer(const Row& r) { return r.where == "ram" ? r.layer : r.layer + " + disk"; }

// Candidates as given, minus empty and repeated names (a row held against
// the same protocol from RAM would otherwise read "smb or smb").
void undecided(Finding& f, const std::string& reason, std::vector<std::string> candidates) {
  f.layer = "undecided";
  f.undecided_reason = reason;
  f.candidates.clear();
  for (std::string& c : candidates) {
    if (!c.empty() && std::find(f.candidates.begin(), f.candidates.end(), c) == f.candidates.end())
      f.candidates.push_back(std::move(c));
  }
  f.cap = "";
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

}  // namespace

namespace rules {

// A figure a cache, a bad figure beneath or the wrong medium may have made:
// no verdict rests on it.
bool protocol_untrusted(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  for (const Row* x : {&p.r, p.b}) {
    if (!x || !(x->cache_suspected || x->anomaly || x->medium_reason)) continue;
    const char* reason = x->medium_reason ? "medium" : x->cache_suspected ? "cache" : "anomaly";
    undecided(
        f, reason,
        {p.r.where == "ram" ? p.r.layer : p.r.layer + " + disk", p.b ? layer_name(*p.b) : ""});
    f.reasons = x->medium_reason     ? std::vector<TrustReason>{*x->medium_reason}
                : x->cache_suspected ? x->cache_reasons
                                     : std::vector<TrustReason>{*x->anomaly_reason};
    return true;
  }
  return false;
}

// The row at a per-session rate limit the server's config sets (vsftpd's
// local_max_rate, proftpd's TransferRate): the limiter holds it there, whatever the CPU does (a
// busy machine's CPU would land the row at the limit only by chance).
bool protocol_rate_cap(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
  double cap = 0;  // bytes/s
  const std::optional<SettingFound> s = rate_cap_found(c.a, r, &cap);
  if (!s) return false;
  f.layer = r.layer;
  f.cap = r.key;
  f.words["server"] = s->server;
  f.words["setting"] = s->parameter;
  f.numbers["rate_cap_bytes_per_s"] = cap;
  return true;
}

// One of the endpoint's processes at its quota or a thread at a core caps it
// outright. Every core busy caps it unless it already reaches the layer
// beneath (a row at the disk's ceiling is held by the disk, busy or not).
bool protocol_cpu(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!cpu_caps(p.r, p.b && p.level == Level::kCeiling)) return false;
  set_cpu(f, p.r, c.a);
  return true;
}

// Nothing beneath was measured (its stage disabled or failed): a figure with
// no ceiling to hold it against names no layer.
bool protocol_unmeasured(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (p.b) return false;
  undecided(f, "unmeasured", {p.r.layer, p.r.where == "ram" ? "tcp" : "server disk"});
  return true;
}

bool protocol_noise(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (p.level != Level::kNoise) return false;
  f.suggested_count = suggested_count(p.r);
  undecided(f, "noise", {own_layer(p.r), layer_name(*p.b)});
  return true;
}

// Over RAM at TCP's ceiling: what caps TCP caps the protocol.
bool protocol_at_tcp_ceiling(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (p.level != Level::kCeiling) return false;
  adopt_tcp_explanation(*p.b, c.a, f);
  return true;
}

// One request in flight: the client's and the server's threads take turns, so
// neither fills a core while the two together do. The client's choice (one
// request at a time) caps it, not the server.
bool protocol_turn_taking(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
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
  if (!(in_flight > 0 && request > 0 && in_flight <= request &&
        client_thread + server_thread + waited >= kThreadSaturated)) {
    return false;
  }
  f.layer = "probe";
  f.lower_bound = true;
  f.cap = r.key;
  f.cpu.host = "both";
  f.cpu.kind = "turns";
  f.cpu.pct = client_thread + server_thread;
  f.cpu.role = "agent";
  f.cpu.process = "chokepoint-agent + the file server";
  f.numbers["request_size"] = double(request);
  f.numbers["client_thread_pct"] = client_thread;
  f.numbers["server_thread_pct"] = server_thread;
  // Said only where the wait is a real share (10 % of a core): a few % is noise.
  if (client_thread + server_thread < kThreadSaturated && waited >= 10) {
    f.numbers["waited_pct"] = waited;
  }
  f.hints.push_back(Hint{"protocol.in_flight", {}, {}});
  return true;
}

// The client sent smaller requests than the server takes: a figure of
// chokepoint's client, whatever the server could do with larger ones.
bool protocol_client_size_limit(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
  const uint64_t limit = client_size_limit(r);
  if (limit == 0) return false;
  f.layer = "probe";
  f.lower_bound = true;
  f.cap = r.key;
  f.numbers["size_limit"] = double(limit);
  const auto reason =
      r.properties.find(r.op == "read" ? "read_size_limit_reason" : "write_size_limit_reason");
  if (reason != r.properties.end()) f.words["size_limit_reason"] = reason->second;
  return true;
}

bool protocol_client_drain(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
  const double window = client_window_rate(r, c.a);
  const double drain = client_drain_fraction(r, c.a);
  if (!(drain >= kProbeDrain && !(window > 0 && r.rate.median >= kProbeLimited * window))) {
    return false;
  }
  f.layer = "probe";
  f.lower_bound = true;
  f.cap = r.key;
  f.numbers["rtt_ms"] = path_rtt_us(r, c.a) / 1000;
  f.numbers["io_size"] = double(property_number(r, "io_size"));
  f.numbers["drain"] = drain;
  f.hints.push_back(Hint{"protocol.client_drain", {}, {}});
  return true;
}

bool protocol_client_window(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  const double window = client_window_rate(p.r, c.a);
  if (!(window > 0 && p.r.rate.median >= kProbeLimited * window)) return false;
  f.layer = "probe";
  f.lower_bound = true;
  f.cap = p.r.key;
  f.numbers["in_flight_bytes"] = double(property_number(p.r, "in_flight_bytes"));
  f.numbers["rtt_ms"] = (p.tcp->rtt_idle_us > 0 ? p.tcp->rtt_idle_us : p.tcp->rtt_us) / 1000;
  f.numbers["window_bytes_per_s"] = window;
  return true;
}

// From disk at the server disk's ceiling (or above it), the disk CPU-bound.
bool protocol_disk_cpu(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!(p.level == Level::kCeiling || p.level == Level::kFaster) || p.b->layer != "disk" ||
      p.b->cpu_bound.empty()) {
    return false;
  }
  set_cpu(f, *p.b, c.a);
  return true;
}

// At the server disk's ceiling, and the disk at its bus's: the bus caps both.
bool protocol_disk_bus(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!(p.level == Level::kCeiling || p.level == Level::kFaster) || p.b->layer != "disk" ||
      !at_bus_ceiling(*p.b)) {
    return false;
  }
  set_bus(f, *p.b);
  return true;
}

// Faster than the layer beneath is at its ceiling too: past the cache rule,
// only a protocol over RAM that a CPU held (no ceiling of its own) is beaten.
bool protocol_disk_ceiling(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!(p.level == Level::kCeiling || p.level == Level::kFaster) || p.b->layer != "disk") {
    return false;
  }
  f.layer = "server disk";
  f.cap = p.b->key;
  return true;
}

// At the ceiling of the same protocol over RAM: the disk costs nothing here,
// and what caps the protocol over RAM (TCP beneath it, a CPU, the client, the
// protocol, or noise) caps it from disk too.
bool protocol_at_ram_ceiling(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!(p.level == Level::kCeiling || p.level == Level::kFaster)) return false;
  Finding over_ram = protocol_finding(c.a, *p.b, false);
  f.suggested_count = over_ram.suggested_count;
  f.suggested_size = over_ram.suggested_size;
  adopt_verdict(std::move(over_ram), f);
  return true;
}

// Below the protocol over RAM with the server disk measured on RAM (the disk
// stage's disk_dir on tmpfs): the real disk is unmeasured.
bool protocol_disk_medium(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (!p.disk || !p.disk->medium_reason) return false;
  undecided(f, "medium", {"server disk", p.r.layer + " + disk"});
  f.reasons = {*p.disk->medium_reason};
  return true;
}

// Below the protocol over RAM with the server disk unmeasured (the disk stage
// disabled or failed): the disk alone may be what holds it.
bool protocol_disk_unmeasured(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (p.disk) return false;
  undecided(f, "unmeasured", {"server disk", p.r.layer + " + disk"});
  return true;
}

// Files of `r` could not tell its layer from the path's round trips: each took
// at most kPerFileRoundTrips round trips longer than the layer beneath (TCP, or
// the server disk: layers without per-file round trips) allows, which setup
// and TCP's slow start alone may cost. Suggests the file size at which that
// many round trips are within the ceiling's margin (10 %).
bool protocol_latency(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  if (p.r.where == "disk" && p.b->layer != "disk") return false;  // the RAM share pays them too
  const double trips = extra_round_trips(p.r, *p.b, c.a);
  if (trips < 0 || trips > kPerFileRoundTrips) return false;
  const double rtt_s = path_rtt_us(p.r, c.a) / 1e6;
  // At ratio >= kAtCeiling: S / v >= kAtCeiling / (1 - kAtCeiling) x the round trips' time.
  const double want = kPerFileRoundTrips * rtt_s * p.b->rate.median * kAtCeiling / (1 - kAtCeiling);
  f.suggested_size = round_size_up(want);
  undecided(f, "latency", {p.r.layer, "network"});
  f.numbers["round_trips"] = trips;
  f.numbers["rtt_ms"] = rtt_s * 1000;
  return true;
}

// Measured while every core of an end was busy, mostly with other processes,
// and below the layer beneath: the load alone may have made it slow.
bool protocol_load(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
  if (r.competing_load_pct <= 0) return false;
  undecided(f, "load", {own_layer(r), "cpu"});
  f.numbers["competing_load_pct"] = r.competing_load_pct;
  if (!r.competing_process.empty()) f.words["competing_process"] = r.competing_process;
  return true;
}

// Its ends did report CPU, but over windows too short to count (under
// kMinCpuWindow in total on each end: small files moving fast): nothing rules
// out the CPU. Suggests the file size whose samples would last long enough
// (twice the minimum, over the same count). Rows without any CPU report (older
// agents) keep their verdict.
bool protocol_short_cpu(const Case& c, Finding& f) {
  const Row& r = c.protocol->r;
  if (r.cpu.empty() || r.rate.n == 0 || r.rate.median <= 0 || r.size == 0) return false;
  double longest = 0;
  for (const auto& [host, u] : r.cpu) longest = std::max(longest, u.seconds);
  if (longest >= kMinCpuWindow) return false;
  const double want = 2 * kMinCpuWindow * r.rate.median / double(r.rate.n);
  f.suggested_size = std::max<uint64_t>(round_size_up(want), 2 * r.size);
  undecided(f, "short", {own_layer(r), "cpu"});
  f.numbers["cpu_seconds"] = longest;
  return true;
}

// Over RAM, below TCP, and nothing else explains it: the protocol layer.
bool protocol_layer(const Case& c, Finding& f) {
  f.layer = c.protocol->r.layer;
  f.cap = c.protocol->r.key;
  return true;
}

// From disk, below both the protocol over RAM and the server disk: the two
// together cost more than either alone.
bool protocol_plus_disk(const Case& c, Finding& f) {
  const ProtocolCase& p = *c.protocol;
  f.layer = p.r.layer + " + disk";
  f.cap = p.r.key;
  // Readahead helps a protocol reading a disk that reads fast on its own (the
  // disk is not the cap), and only while it is small.
  const HostFacts& h = c.a.server;
  if (p.r.op != "read" || !p.disk || h.read_ahead_kb < 0) return true;
  f.numbers["read_ahead_kb"] = double(h.read_ahead_kb);
  f.words["disk_device"] = h.disk_device;
  if (h.read_ahead_kb < static_cast<int64_t>(kGoodReadaheadKb)) {
    f.hints.push_back(
        Hint{"disk.readahead",
             {{"disk_bps", p.disk->rate.median},
              {"protocol_bps", p.r.rate.median},
              {"read_ahead_kb", double(h.read_ahead_kb)}},
             {{"protocol", protocol_name(p.r.layer)}, {"disk_device", h.disk_device}}});
  } else {
    f.words["readahead"] = "enough";
  }
  return true;
}

}  // namespace rules

Finding protocol_finding(const Analysis& a, const Row& r, bool extras) {
  const bool read = r.op == "read";
  const std::string proto = protocol_name(r.layer);
  ProtocolCase p{r};
  p.b = find_row(a, r.below);
  // TCP as this protocol meets it: one stream, or the streams of its connections.
  p.tcp = p.b && p.b->layer == "tcp" ? p.b
                                     : tcp_row(a.rows, read ? "server->client" : "client->server");
  p.ram = proto_row(a.rows, r.layer, "ram", r.op, r.size);
  p.disk = disk_row(a.rows, "server", r.op, r.size);
  if (p.b) p.level = level_of(r, *p.b);
  Finding f;
  f.path = fmt::format("{} {} {}", r.layer, r.where, r.op);
  f.ratio = r.ratio;
  f.ratio_lo = r.ratio_lo;
  f.ratio_hi = r.ratio_hi;
  const transfer::DriverSpec* spec = transfer::find_driver_spec(r.layer);
  f.misconfigured = server_misconfigured(a, spec, r);
  if (r.where == "disk" && p.disk) f.rows.push_back(p.disk->key);
  if (p.tcp && find_row(a, "link")) f.rows.push_back("link");
  if (p.tcp) f.rows.push_back(p.tcp->key);
  if (r.where == "disk" && p.ram) f.rows.push_back(p.ram->key);
  f.rows.push_back(r.key);
  f.subject = cite(r, CitedName::kMediumOp);
  if (p.b) f.beneath = cite(*p.b, p.b->layer == "tcp" ? CitedName::kLayer : CitedName::kLabel);
  if (p.b && p.b->layer == "tcp" && tcp_total_row(a.rows, p.b->where, 0)) {
    // The run measured several streams too: say which TCP this protocol meets.
    f.numbers["tcp_streams"] = p.b->streams;
    f.numbers["connections"] = protocol_connections(r);
  }
  f.words["protocol"] = proto;
  if (r.below_size) f.numbers["below_size"] = double(r.below_size);
  if (r.where == "disk") {
    if (p.ram) f.context.push_back(cite(*p.ram, CitedName::kMedium));
    if (p.disk) f.context.push_back(cite(*p.disk, CitedName::kTheLayer));
  }
  const bool judged = run_chain(r.where == "ram" ? kProtocolRamChain : kProtocolDiskChain,
                                Case{a, nullptr, nullptr, &p}, f);
  CP_CHECK(judged);  // protocol.layer and protocol.plus_disk apply to what the others leave
  name_costly_settings(a, r, f);
  if (extras) {
    for (const auto& m : f.misconfigured) f.hints.push_back(m);
    // The negotiated request size, when it is small and the config does not say why.
    const uint64_t io = property_number(r, read ? "max_read_size" : "max_write_size");
    if (spec && spec->hints.negotiated_request_size && f.misconfigured.empty() && io > 0 &&
        io < (1u << 20)) {
      f.hints.push_back(Hint{
          "protocol.negotiated_size", {{"size", double(io)}}, {{"protocol", proto}, {"op", r.op}}});
    }
  }
  return f;
}

}  // namespace cp::analysis
