#include "report/finding_text.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/units.h"
#include "report/hint_text.h"
#include "report/row_text.h"
#include "transfer/driver.h"

namespace cp::report {
namespace {

using analysis::Cited;
using analysis::CpuBound;
using analysis::Finding;

std::string mbps(double bps) { return format_mbps(bps); }

double num(const Finding& f, const char* key, double fallback = 0) {
  auto it = f.numbers.find(key);
  return it == f.numbers.end() ? fallback : it->second;
}
bool has(const Finding& f, const char* key) { return f.numbers.count(key) > 0; }
std::string word(const Finding& f, const char* key) {
  // A trust finding's reason and fix are rendered from its structure.
  const std::string_view k = key;
  if (k == "reason" || k == "fix") {
    const std::map<std::string, std::string> words = finding_words(f);
    auto it = words.find(key);
    return it == words.end() ? std::string() : it->second;
  }
  auto it = f.words.find(key);
  return it == f.words.end() ? std::string() : it->second;
}
std::string bits(const Finding& f) { return format_rate_bits(num(f, "path_bits")); }
// ", busiest: cc1plus" when the finding names one.
std::string busiest(const Finding& f, const char* sep = ", busiest: ") {
  const std::string p = word(f, "competing_process");
  return p.empty() ? "" : sep + p;
}
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string describe_proc(const std::string& comm, const std::string& role) {
  if (role == "agent") return "chokepoint's own " + (comm.empty() ? "agent" : comm);
  return comm.empty() ? "a process" : comm;
}

std::string head(const Finding& f);

// "SATA 3.0 Gbps", "PCIe 8.0 GT/s x4", "USB 5000 Mbit/s".
std::string one_link(const analysis::BusLinkInfo& l) {
  if (l.kind == "sata") return "SATA " + l.link;
  if (l.kind == "pcie") return l.link.find("PCIe") == std::string::npos ? "PCIe " + l.link : l.link;
  if (l.kind == "usb") return "USB " + l.link;
  if (l.kind == "virtual") return l.member + ": no bus";
  return l.kind + " " + l.link;
}

// The bus's name: one link's, or an array's members' links.
std::string bus_name(const analysis::BusCeiling& b) {
  if (b.kind != "members") return b.links.empty() ? b.kind : one_link(b.links[0]);
  std::string s;
  for (const auto& l : b.links) {
    s += (s.empty() ? "" : ", ") +
         (l.kind == "virtual" ? one_link(l) : l.member + ": " + one_link(l));
  }
  return fmt::format("its {} members' links together ({})", b.links.size(), s);
}

// What frees a disk from its bus.
std::string bus_fix(const analysis::BusCeiling& b) {
  if (b.kind == "sata") {
    const bool slow = !b.links.empty() && b.links[0].link.rfind("6", 0) != 0;
    return slow ? "connect the disk to a 6 Gbit/s SATA port or another controller"
                : "a faster interface (NVMe) or another controller";
  }
  if (b.kind == "pcie") return "a slot with more lanes or a newer PCIe generation";
  if (b.kind == "usb") return "a faster USB port (or another controller), or an internal port";
  return "spread the members over more ports or controllers";
}

// A disk capped by its bus (path.bus, protocol.disk_bus).
std::string bus_cap_text(const Finding& f) {
  return fmt::format(
      "the {} caps it: the {} disk {}s {} = {} of {} ({} theoretical, {} effective): {}", f.layer,
      word(f, "disk_where"), f.subject.layer == "disk" ? f.subject.op : f.beneath.op,
      mbps(f.subject.layer == "disk" ? f.subject.median : f.beneath.median),
      format_percent(num(f, "bus_ratio")), bus_name(f.bus),
      mbps(num(f, "bus_theoretical_bytes_per_s")), mbps(num(f, "bus_effective_bytes_per_s")),
      bus_fix(f.bus));
}

// What the TCP rules cite besides their verdict: tcp_info limits, retransmits
// and the round trip.
std::string tcp_because(const Finding& f) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  if (has(f, "rwnd_limited_frac")) {
    add(fmt::format("receive-window-limited {} of the time",
                    format_percent(num(f, "rwnd_limited_frac"))));
  }
  if (has(f, "sndbuf_limited_frac")) {
    add(fmt::format("send-buffer-limited {} of the time",
                    format_percent(num(f, "sndbuf_limited_frac"))));
  }
  if (has(f, "retransmits")) add(fmt::format("{:.0f} retransmits", num(f, "retransmits")));
  if (has(f, "rtt_idle_ms")) {
    add(fmt::format("RTT {:.2f} ms idle, {:.2f} ms under load", num(f, "rtt_idle_ms"),
                    num(f, "rtt_ms")));
  }
  return s;
}

// "server NIC 10 Gbit/s, client NIC 1 Gbit/s".
std::string nics(const Finding& f) {
  std::string s;
  for (const char* role : {"server", "client"}) {
    const std::string key = std::string(role) + "_nic_bits";
    auto it = f.numbers.find(key);
    if (it == f.numbers.end()) continue;
    s += fmt::format("{}{} NIC {}", s.empty() ? "" : ", ", role, format_rate_bits(it->second));
  }
  return s;
}

std::string tcp_path_text(const Finding& f) {
  const Cited& t = f.subject;
  const bool link = word(f, "path_kind") == "link";
  std::string evidence = link ? fmt::format("the {} link", bits(f)) : nics(f);
  if (word(f, "queue") == "rtt") {
    evidence +=
        fmt::format("; RTT rises from {:.2f} ms idle to {:.2f} ms under load: a queue on the path",
                    num(f, "rtt_idle_ms"), num(f, "rtt_ms"));
  }
  return fmt::format(
      "{} carries {}, only {} of {}, with no window, buffer or CPU limit: the network path "
      "between the hosts caps it ({}{})",
      row_label(t), mbps(t.median), format_percent(num(f, "link_ratio")), bits(f), evidence,
      has(f, "retransmits") ? fmt::format("; {:.0f} retransmits", num(f, "retransmits")) : "");
}

// Why TCP is where it is (rules tcp.*), without hints.
std::string tcp_head(const Finding& f) {
  const Cited& t = f.subject;
  const std::string kind = word(f, "path_kind");
  std::string s;
  if (f.rule == "tcp.path") return tcp_path_text(f);
  if (f.rule == "tcp.cpu") {
    s = fmt::format("{} carries {} while {}", row_label(t), mbps(t.median), cpu_text(f.cpu));
  } else if (f.rule == "tcp.window") {
    s = fmt::format("{} carries {}{}: a window or buffer limits it", row_label(t), mbps(t.median),
                    has(f, "path_bits")
                        ? fmt::format(" ({} of {})", format_percent(num(f, "link_ratio")), bits(f))
                        : "");
  } else if (f.rule == "tcp.link_unknown") {
    s = fmt::format(
        "{} carries {} with no window, buffer or CPU limit, and the link's speed is unknown: "
        "cannot tell whether the network, TCP or a CPU caps it; set [link] nominal in the plan",
        row_label(t), mbps(t.median));
  } else if (f.rule == "tcp.above_link") {
    s = fmt::format(
        "{} carries {} (its fastest sample {}), above the {} nominal {} ({}): that speed is no "
        "ceiling here (a virtual link?), and no window, buffer or CPU limit shows: cannot tell "
        "what caps it (TCP itself, or CPU work spread over cores that no thread or quota shows)",
        row_label(t), mbps(t.median), mbps(t.max), kind == "link" ? "link's" : "interfaces'",
        bits(f), format_percent(num(f, "fastest_ratio")));
  } else if (f.rule == "tcp.busy_near_link") {
    const std::string why =
        f.cpu_weighed.empty()
            ? fmt::format("every core was busy, mostly with other processes ({:.0f} % of a core)",
                          num(f, "competing_load_pct"))
            : cpu_text(f.cpu_weighed);
    s = fmt::format(
        "{} reaches {} of the {} {} ({}), but its samples swing ({} to {}) while {}: the CPU may "
        "hold it there as well as the network; measure on a quieter machine",
        row_label(t), format_percent(num(f, "link_ratio")), bits(f), kind, mbps(t.median),
        mbps(t.min), mbps(t.max), why);
  } else if (f.rule == "tcp.at_link") {
    s = fmt::format("{} reaches {} of the {} {} ({}): the network is at its ceiling", row_label(t),
                    format_percent(num(f, "link_ratio")), bits(f), kind, mbps(t.median));
  } else if (f.rule == "tcp.load") {
    s = fmt::format(
        "{} carries {}, only {} of {}, but every core was busy during its samples, mostly with "
        "other processes ({:.0f} % of a core{}): the load alone may have held it back; measure "
        "on a quieter machine",
        row_label(t), mbps(t.median), format_percent(num(f, "link_ratio")), bits(f),
        num(f, "competing_load_pct"), busiest(f));
  } else {
    CP_CHECK(false && "a tcp rule without its text");
  }
  const std::string because = tcp_because(f);
  return because.empty() ? s : s + "; " + because;
}

// The other layers of a path: "TCP carries 117 MB/s, the client disk writes 99.8 MB/s".
std::string path_others(const Finding& f) {
  std::string s;
  for (size_t i = 0; i < f.context.size(); ++i) {
    const Cited& l = f.context[i];
    s += fmt::format("{}{}{} {} {}", i ? ", " : "", l.layer == "tcp" ? "" : "the ", cited_name(l),
                     cited_verb(l), mbps(l.median));
  }
  return s;
}

std::string path_head(const Finding& f) {
  const Cited& cap = f.subject;
  if (f.rule == "path.medium") {
    return fmt::format("{}: cannot tell what caps it: {}", f.path, word(f, "reason"));
  }
  if (f.rule == "path.noise") {
    const Cited& next = f.context.at(0);
    return fmt::format(
        "{}: the {} ({}) and the {} ({}) are within each other's noise (ratio {:.2f}, 95 % "
        "interval {:.2f}-{:.2f}): either may cap it; repeat with count = {}",
        f.path, cited_name(cap), mbps(cap.median), cited_name(next), mbps(next.median), f.ratio,
        f.ratio_lo, f.ratio_hi, f.suggested_count);
  }
  if (f.rule == "path.tcp") {
    const std::string& layer = f.layer;
    if (layer == "undecided" && f.undecided_reason != "load") {
      return fmt::format("{}: TCP is the slowest layer, and {}", f.path, head(f.because.at(0)));
    }
    return fmt::format("{}: {} caps it. {}", f.path,
                       layer == "network"        ? "the network"
                       : layer == "network path" ? "the network path"
                       : layer == "cpu"          ? "the CPU"
                       : layer == "undecided"    ? "TCP, or the load on the machine,"
                                                 : "the TCP layer",
                       head(f.because.at(0)));
  }
  if (f.rule == "path.cpu") {
    return fmt::format("{}: the CPU caps it: the {} {} {} while {}", f.path, cited_name(cap),
                       cited_verb(cap), mbps(cap.median), cpu_text(f.cpu));
  }
  if (f.rule == "path.bus") return fmt::format("{}: {}", f.path, bus_cap_text(f));
  CP_CHECK(f.rule == "path.slowest");
  return fmt::format("{}: the {} caps it: it {} {}{}", f.path, cited_name(cap), cited_verb(cap),
                     mbps(cap.median),
                     cap.size ? fmt::format(" ({} files)", format_size(cap.size)) : "");
}

// After a path's hints: its other layers, and whether the two slowest are both
// near their ceiling.
std::string path_tail(const Finding& f) {
  if (f.rule == "path.medium" || f.rule == "path.noise") return "";
  std::string s;
  if (!f.context.empty()) s += "; " + path_others(f);
  if (const std::string near = word(f, "near"); !near.empty()) {
    s += fmt::format(" (the {} is within 10 %: both are near their ceiling)", near);
  }
  return s;
}

// " (held against 10 MB files, the nearest size measured)" when it was.
std::string size_note(const Finding& f) {
  if (!has(f, "below_size")) return "";
  return fmt::format(" (held against {} files, the nearest size measured)",
                     format_size(static_cast<uint64_t>(num(f, "below_size"))));
}

// "FTP from RAM moves 120 MB/s, the server disk reads 199 MB/s".
std::string disk_context(const Finding& f) {
  std::string s;
  for (const Cited& c : f.context) {
    s += fmt::format("{}{} {} {}", s.empty() ? "" : ", ", cited_name(c), cited_verb(c),
                     mbps(c.median));
  }
  return s;
}

// Which TCP a protocol is held against, where the run measured several
// streams: " with one stream, as FTP uses one connection".
std::string tcp_which(const Finding& f) {
  if (!has(f, "tcp_streams")) return "";
  const double n = num(f, "tcp_streams"), c = num(f, "connections");
  const std::string proto = word(f, "protocol");
  if (n <= 1) return fmt::format(" with one stream, as {} uses one connection", proto);
  return fmt::format(" with {:.0f} streams at once, as {} uses {:.0f} connections", n, proto, c);
}

// "SMB from RAM read moves 50 MB/s = 43 % of TCP (117 MB/s)".
std::string moves_of(const Finding& f) {
  return fmt::format("{} moves {} = {} of {}{} ({})", cited_name(f.subject), mbps(f.subject.median),
                     format_percent(f.ratio), cited_name(f.beneath), tcp_which(f),
                     mbps(f.beneath.median));
}

// A client-side limit (protocol.turn_taking, client_*): the figure is a lower bound.
std::string probe_head(const Finding& f) {
  const std::string p = f.path, bound =
                                    "the figure is a lower bound limited by the client, not "
                                    "the server";
  if (f.rule == "protocol.turn_taking") {
    const std::string turns =
        has(f, "waited_pct")
            ? fmt::format(
                  "and waited {:.0f} % of a core for a CPU that other processes held: "
                  "together a whole core (on a quieter machine the figure rises)",
                  num(f, "waited_pct"))
            : "together a whole core";
    return fmt::format(
        "{}: {} with one request of {} in flight: chokepoint's client (a thread at {:.0f} % of "
        "a core) and the server (a thread at {:.0f} %) take turns, {}: {}",
        p, moves_of(f), format_size(static_cast<uint64_t>(num(f, "request_size"))),
        num(f, "client_thread_pct"), num(f, "server_thread_pct"), turns, bound);
  }
  if (f.rule == "protocol.client_size_limit") {
    const std::string why = word(f, "size_limit_reason");
    return fmt::format("{}: {} with chokepoint's client held to {} per {} request{}: {}", p,
                       moves_of(f), format_size(static_cast<uint64_t>(num(f, "size_limit"))),
                       f.subject.op, why.empty() ? "" : " (" + why + ")", bound);
  }
  if (f.rule == "protocol.client_drain") {
    return fmt::format(
        "{}: {}, but chokepoint's client waits a round trip ({:.2f} ms) after every {} call, {} "
        "of its time: {}",
        p, moves_of(f), num(f, "rtt_ms"), format_size(static_cast<uint64_t>(num(f, "io_size"))),
        format_percent(num(f, "drain")), bound);
  }
  CP_CHECK(f.rule == "protocol.client_window");
  return fmt::format(
      "{}: {}, which is what chokepoint's client keeps in flight allows ({} over a {:.2f} ms "
      "round trip = {}): {}",
      p, moves_of(f), format_size(static_cast<uint64_t>(num(f, "in_flight_bytes"))),
      num(f, "rtt_ms"), mbps(num(f, "window_bytes_per_s")), bound);
}

// Cannot tell (protocol.* undecided): why, and how to settle it.
std::string protocol_undecided(const Finding& f) {
  const Cited &r = f.subject, &b = f.beneath;
  const std::string& p = f.path;
  const std::string proto = word(f, "protocol");
  const std::string what = cited_name(r);
  const bool ram = r.where == "ram";
  if (f.rule == "protocol.untrusted") {
    return fmt::format("{}: cannot tell what caps it: {}", p, word(f, "reason"));
  }
  if (f.rule == "protocol.unmeasured") {
    const std::string missing =
        ram ? fmt::format("TCP {}", r.op == "read" ? "server -> client" : "client -> server")
            : fmt::format("the server disk ({}s) and {} from RAM", r.op, proto);
    return fmt::format(
        "{}: {} moves {}, but {} was not measured (its stage was disabled or failed), so nothing "
        "shows whether a layer beneath holds it: run the {} stage too",
        p, what, mbps(r.median), missing, ram ? "TCP" : "disk (and a RAM share's)");
  }
  if (f.rule == "protocol.noise") {
    return fmt::format(
        "{}: {} ({}) and {} ({}) are within each other's noise (ratio {:.2f}, 95 % interval "
        "{:.2f}-{:.2f}){}: repeat with count = {}",
        p, what, mbps(r.median), cited_name(b), mbps(b.median), f.ratio, f.ratio_lo, f.ratio_hi,
        size_note(f), f.suggested_count);
  }
  if (f.rule == "protocol.latency") {
    return fmt::format(
        "{}: {}, but each {} file takes only {:.0f} round trips ({:.2f} ms each) longer than {} "
        "alone would, no more than a file's setup and TCP's slow start may cost on this path: "
        "the files are too small to tell the {} layer from the path's latency; repeat with "
        "files of at least {}",
        p, moves_of(f), format_size(r.size), num(f, "round_trips"), num(f, "rtt_ms"),
        b.layer == "tcp" ? "TCP" : "the disk", proto, format_size(f.suggested_size));
  }
  if (f.rule == "protocol.load") {
    return fmt::format(
        "{}: {} moves {} = {} of the layer beneath, but every core was busy during its samples, "
        "mostly with other processes ({:.0f} % of a core{}): the load alone may have made it "
        "slow; measure on a quieter machine",
        p, what, mbps(r.median), format_percent(f.ratio), num(f, "competing_load_pct"), busiest(f));
  }
  if (f.rule == "protocol.short_cpu") {
    return fmt::format(
        "{}: {} moves {} = {} of the layer beneath, but the CPU was sampled over only {:.2f} s "
        "of its {} samples, too short to rule the CPU out; repeat with files of at least {}",
        p, what, mbps(r.median), format_percent(f.ratio), num(f, "cpu_seconds"), r.n,
        format_size(f.suggested_size));
  }
  if (f.rule == "protocol.disk_medium") {
    return fmt::format("{}: cannot tell what caps it: {} moves {}, only {} of {} from RAM, and {}",
                       p, what, mbps(r.median), format_percent(f.ratio), proto, word(f, "reason"));
  }
  CP_CHECK(f.rule == "protocol.disk_unmeasured");
  return fmt::format(
      "{}: {} moves {}, only {} of {} from RAM ({}), but the server disk's {}s were not "
      "measured (the disk stage was disabled or failed): the disk alone may hold it; run the "
      "disk stage too",
      p, what, mbps(r.median), format_percent(f.ratio), proto, mbps(b.median), r.op);
}

std::string protocol_head(const Finding& f) {
  const Cited &r = f.subject, &b = f.beneath;
  const std::string& p = f.path;
  const std::string proto = word(f, "protocol");
  if (f.rule == "protocol.rate_cap") {
    return fmt::format(
        "{}: {} moves {}{}: the {} server holds each session to {} (`{}`): that setting caps it", p,
        cited_name(r), mbps(r.median),
        b.empty() ? "" : fmt::format(" = {} of {}", format_percent(f.ratio), cited_name(b)),
        word(f, "server"), mbps(num(f, "rate_cap_bytes_per_s")), word(f, "setting"));
  }
  if (f.rule == "protocol.cpu") {
    return fmt::format(
        "{}: {} moves {}{}: the CPU caps it: {}", p, cited_name(r), mbps(r.median),
        b.empty() ? "" : fmt::format(" = {} of {}", format_percent(f.ratio), cited_name(b)),
        cpu_text(f.cpu));
  }
  if (f.rule == "protocol.at_tcp_ceiling") {
    return fmt::format("{}: {}: the protocol is at TCP's ceiling, so the layer beneath caps it. {}",
                       p, moves_of(f), head(f.because.at(0)));
  }
  if (starts_with(f.rule, "protocol.client_") || f.rule == "protocol.turn_taking") {
    return probe_head(f);
  }
  if (f.rule == "protocol.layer") {
    return fmt::format(
        "{}: {} moves {} = {} of TCP{} ({}, 95 % interval {}-{}): the {} layer caps it", p,
        cited_name(r), mbps(r.median), format_percent(f.ratio), tcp_which(f), mbps(b.median),
        format_percent(f.ratio_lo), format_percent(f.ratio_hi), proto);
  }
  if (f.rule == "protocol.disk_cpu") {
    return fmt::format("{}: {} moves {} = {} of the server disk, which is CPU-bound: {}{}", p,
                       cited_name(r), mbps(r.median), format_percent(f.ratio), cpu_text(f.cpu),
                       size_note(f));
  }
  if (f.rule == "protocol.disk_bus") {
    return fmt::format("{}: {} moves {} = {} of the server disk, and {}{}", p, cited_name(r),
                       mbps(r.median), format_percent(f.ratio), bus_cap_text(f), size_note(f));
  }
  if (f.rule == "protocol.disk_ceiling") {
    return fmt::format("{}: {} moves {} = {} of the server disk: the server disk caps it ({}){}", p,
                       cited_name(r), mbps(r.median), format_percent(f.ratio), disk_context(f),
                       size_note(f));
  }
  if (f.rule == "protocol.at_ram_ceiling") {
    return fmt::format(
        "{}: {} moves {} = {} of {} from RAM ({}){}: the disk costs nothing here, and what caps "
        "{} from RAM caps it: {}",
        p, cited_name(r), mbps(r.median), format_percent(f.ratio), proto, disk_context(f),
        size_note(f), proto, head(f.because.at(0)));
  }
  if (f.rule == "protocol.plus_disk") {
    std::string s = fmt::format(
        "{}: {} moves {}, only {} of {} ({}): {} together cost more than either layer alone{}", p,
        cited_name(r), mbps(r.median), format_percent(f.ratio), cited_name(b), disk_context(f),
        r.op == "read" ? "reading and serving" : "receiving and writing", size_note(f));
    if (word(f, "readahead") == "enough") {
      s += fmt::format("; the server's readahead is already {:.0f} KiB on {}: more would not help",
                       num(f, "read_ahead_kb"), word(f, "disk_device"));
    }
    return s;
  }
  return protocol_undecided(f);
}

// A per-operation latency: "40 us", "1.2 ms", "537 ms".
std::string format_latency_us(double us) {
  if (us < 1000) return fmt::format("{:.0f} us", us);
  if (us < 10000) return fmt::format("{:.1f} ms", us / 1000);
  return fmt::format("{:.0f} ms", us / 1000);
}

// Small files over a share (the files chain): what one operation costs.
std::string files_share_head(const Finding& f) {
  const Cited& r = f.subject;
  const std::string op = r.op.starts_with("random-") ? r.op.substr(7) : r.op;
  const std::string does =
      fmt::format("{} does {:.0f} {}s/s", row_label(r), num(f, "ops_per_s"), op);
  const std::string each =
      fmt::format("each {} takes {} (median)", op, format_latency_us(num(f, "latency_median_us")));
  const std::string rtts = f.numbers.count("latency_rtts")
                               ? fmt::format(", {:.0f} round trips of the path's {:.2f} ms",
                                             num(f, "latency_rtts"), num(f, "rtt_ms"))
                               : "";
  if (f.rule == "files.untrusted") {
    return fmt::format(
        "{}, but a cache may have served the reads ({}): cannot tell the {} layer "
        "from the cache",
        does, word(f, "reason"),
        transfer::protocol_display(f.candidates.size() > 1 ? f.candidates[1] : ""));
  }
  if (f.rule == "files.cpu") return fmt::format("{} while {}", does, cpu_text(f.cpu));
  if (f.rule == "files.round_trips") {
    // Bound by the serial round trips taking turns, or by those in flight.
    const bool turns = word(f, "bound") == "turns";
    const std::string ceiling =
        turns ? fmt::format(
                    "{:.0f} of which take turns on the connection whatever is in flight, so "
                    "{:.0f}/s at most",
                    num(f, "serial_round_trips"), num(f, "ceiling_ops_per_s"))
              : fmt::format("so {:.0f}/s at most with {:.1f} in flight",
                            num(f, "ceiling_ops_per_s"), num(f, "in_flight"));
    return fmt::format(
        "{}, {:.0f} % of what the round trips allow: each {} costs at least {:.0f} round trips of "
        "{:.2f} ms, {}; {} or a shorter path would lift it",
        does, 100 * f.ratio, op, num(f, "round_trips"), num(f, "rtt_ms"), ceiling,
        turns ? "more connections (each its own turn)"
              : "more operations in flight (the share's connections or depth, a copy tool with "
                "parallel workers)");
  }
  if (f.rule == "files.disk") {
    return fmt::format(
        "{}, {:.0f} % of the server disk's own rate for it ({:.0f}/s): the disk's "
        "metadata rate caps it",
        does, 100 * f.ratio, num(f, "disk_ops_per_s"));
  }
  if (f.rule == "files.client") {
    return fmt::format(
        "{}: {}; chokepoint's client spent {:.0f} us of its own CPU on each ({:.0f} % of an "
        "operation's time): its client paces it, so this is a lower bound of what the {} layer "
        "does",
        does, each, num(f, "client_cpu_us_per_op"), 100 * num(f, "client_cpu_share"),
        transfer::protocol_display(word(f, "driver")));
  }
  CP_CHECK(f.rule == "files.layer");
  return fmt::format(
      "{}: {}{}{}: the {} layer's cost per operation (its server and client, one operation at a "
      "time) caps it, not the network or the disk",
      does, each, rtts,
      f.numbers.count("disk_ops_per_s")
          ? fmt::format(", where the server disk does {:.0f}/s", num(f, "disk_ops_per_s"))
          : "",
      transfer::protocol_display(f.layer));
}

bool is_files_share_rule(const std::string& rule) {
  return rule == "files.untrusted" || rule == "files.cpu" || rule == "files.round_trips" ||
         rule == "files.disk" || rule == "files.client" || rule == "files.layer";
}

// Run-wide findings: trust checks, CPU-bound rows, load, errors, MTU.
std::string run_head(const Finding& f) {
  const Cited& r = f.subject;
  if (f.rule == "trust.page_cache") return "cache suspected: " + word(f, "reason");
  if (f.rule == "trust.anomaly") return word(f, "reason");
  if (f.rule == "trust.medium") return fmt::format("{}: {}", word(f, "reason"), word(f, "fix"));
  if (f.rule == "trust.cache_ruled_out") {
    const std::string role = word(f, "role");
    return fmt::format(
        "{:.0f} of {} samples of {} ran without O_DIRECT, but the {} files are larger than the "
        "{}'s RAM ({}), so the page cache cannot have served most of them",
        num(f, "cache_possible"), r.n, row_label(r), format_size(r.size), role,
        format_size(static_cast<uint64_t>(num(f, "memory_bytes"))));
  }
  if (f.rule == "cpu.bound") {
    if (r.layer == "files") {  // a small-file row's figure is operations/s
      return fmt::format("{} does {:.0f} operations/s while {}", row_label(r), r.median,
                         cpu_text(f.cpu));
    }
    return fmt::format("{} moves {} while {}", row_label(r), mbps(r.median), cpu_text(f.cpu));
  }
  if (f.rule == "files.disk_cpu") {
    return fmt::format("{} does {:.0f} operations/s while {}: the CPU, not the disk, sets it{}",
                       row_label(r), num(f, "ops_per_s"), cpu_text(f.cpu),
                       f.lower_bound ? " (chokepoint's own agent: a lower bound)" : "");
  }
  if (f.rule == "files.disk_latency") {
    return fmt::format(
        "{}: its worst operation took {} where the median took {} (p99 {}): the disk or its "
        "journal stalled; a copy of many small files waits on such stalls",
        row_label(r), format_latency_us(num(f, "max_us")), format_latency_us(num(f, "median_us")),
        format_latency_us(num(f, "p99_us")));
  }
  if (f.rule == "load.competing") {
    std::string list;
    for (size_t i = 0; i < f.context.size(); ++i) list += (i ? ", " : "") + row_label(f.context[i]);
    return fmt::format(
        "every core was busy while {} ran, mostly with other processes (up to {:.0f} % of a "
        "core{}): their figures may be low; measure on a quieter machine to be sure",
        list, num(f, "competing_load_pct"), busiest(f));
  }
  if (f.rule == "errors.failed_samples") {
    const double failed = num(f, "failed");
    return fmt::format("{:.0f} of {:.0f} samples of {} failed; the figures use the rest", failed,
                       failed + double(r.n), row_label(r));
  }
  CP_CHECK(f.rule == "network.mtu_mismatch");
  return fmt::format("MTU mismatch on the data path: server {:.0f} vs client {:.0f}",
                     num(f, "server_mtu"), num(f, "client_mtu"));
}

// The finding's own words, without hints: what its rule found.
std::string head(const Finding& f) {
  if (starts_with(f.rule, "tcp.")) return tcp_head(f);
  if (starts_with(f.rule, "path.")) return path_head(f);
  if (starts_with(f.rule, "protocol.")) return protocol_head(f);
  if (is_files_share_rule(f.rule)) return files_share_head(f);
  return run_head(f);
}

std::string render(const Finding& f, bool hints) {
  std::string s = head(f);
  if (hints) {
    for (const auto& h : f.hints) s += "; " + hint_text(h);
  }
  if (starts_with(f.rule, "path.")) s += path_tail(f);
  if (!f.untrusted.empty()) {
    std::string list;
    for (const auto& l : f.untrusted) list += (list.empty() ? "" : ", ") + row_label(l);
    s += fmt::format("; cache suspected for {}, so that figure is not trusted", list);
  }
  return s + ".";
}

}  // namespace

std::map<std::string, std::string> finding_words(const Finding& f) {
  std::map<std::string, std::string> words = f.words;
  if (!f.reasons.empty()) words["reason"] = trust_reasons_text(f.reasons);
  if (f.rule == "trust.medium") words["fix"] = medium_fix_text(f.reasons.at(0));
  return words;
}

const char* confidence_name(analysis::Confidence c) {
  static constexpr EnumName<analysis::Confidence> kNames[] = {
      {analysis::Confidence::kCertain, "certain"},
      {analysis::Confidence::kLikely, "likely"},
      {analysis::Confidence::kCannotTell, "cannot tell"}};
  return name_in(kNames, c, "cannot tell");
}

std::string finding_text(const Finding& f) { return render(f, true); }
std::string finding_sentence(const Finding& f) { return render(f, false); }

std::string headline_text(const analysis::Headline& h) {
  if (h.finding) return finding_text(*h.finding);
  if (!h.stored_text.empty()) return h.stored_text;
  if (h.figures_only) {
    return "Only the small-file stage produced samples: its rows are in the ladder; no verdict "
           "judges them yet.";
  }
  return h.stages_ran ? "No stage produced samples, so there is no verdict."
                      : "No stage ran, so there is no verdict.";
}

std::string headline_text(const analysis::Analysis& a) {
  return headline_text(analysis::headline_of(a));
}

std::string cpu_text(const CpuBound& c) {
  std::string s;
  const std::string who = describe_proc(c.process, c.role);
  if (c.kind == "turns") {
    return fmt::format(
        "one request in flight: client and server threads take turns ({:.0f} % of a core "
        "together)",
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
  if (c.same_machine && c.host != "both") s += " (both ends share one machine's CPUs)";
  return s;
}

std::string bus_ladder_text(const analysis::Row& r) {
  const analysis::BusCeiling& b = r.bus;
  if (b.kind == "virtual") return "no bus: a virtual disk";
  if (b.empty()) return "";
  if (b.theoretical <= 0) return fmt::format("on {} (its ceiling unknown)", bus_name(b));
  return fmt::format("{} of {} ({} theoretical, {} effective)", format_percent(r.bus_ratio),
                     bus_name(b), mbps(b.theoretical), mbps(b.effective()));
}

std::string cpu_brief(const CpuBound& c) {
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

}  // namespace cp::report
