#include "report/row_text.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"

namespace cp::report {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "from RAM" | "from disk": a share's medium.
const char* medium_text(const std::string& where) {
  return where == "ram" ? "from RAM" : "from disk";
}

// A small-file row: "server disk random create, 4 KiB (ops/s)" on an end's own
// disk, "SMB from disk create, 4 KiB files (ops/s)" over a share.
std::string files_label(const analysis::RowIdentity& r) {
  const bool random = starts_with(r.op, "random-");
  const std::string phase = random ? r.op.substr(7) : r.op;
  if (r.driver.empty()) {
    return fmt::format("{} disk {}{}, {} (ops/s)", r.where, random ? "random " : "", phase,
                       format_size(r.size));
  }
  return fmt::format("{} {} {}{}, {} files (ops/s)", transfer::protocol_display(r.driver),
                     medium_text(r.where), random ? "random " : "", phase, format_size(r.size));
}

// A protocol over a share: "SMB from RAM read, 100 MB files"; the transfer-size
// scan's cells (op "sweep-seqread") by their request size.
std::string protocol_label(const analysis::RowIdentity& r) {
  const std::string proto = transfer::protocol_display(r.layer);
  if (starts_with(r.op, "sweep-")) {
    return fmt::format("{} {} {}, {} requests", proto, medium_text(r.where), r.op.substr(6),
                       format_size(r.size));
  }
  return fmt::format("{} {} {}, {} files", proto, medium_text(r.where),
                     r.op == "read" ? "read" : "write", format_size(r.size));
}

}  // namespace

std::string row_label(const analysis::RowIdentity& r) {
  if (r.layer == "link") return "link (nominal, " + link_source_text(r.link) + ")";
  if (r.layer == "disk") {
    // syncwrite: a flush per block, as a file server with sync on writes.
    return fmt::format("{} disk {}, {} files", r.where,
                       r.op == "syncwrite" ? "synchronous write" : r.op, format_size(r.size));
  }
  if (r.layer == "tcp") {
    const std::string dir = r.where == "server->client"   ? "server -> client"
                            : r.where == "client->server" ? "client -> server"
                                                          : r.where;
    return "TCP " + dir + (r.streams > 1 ? fmt::format(", {} streams", r.streams) : "");
  }
  if (r.layer == "files") return files_label(r);
  return protocol_label(r);
}

std::string link_source_text(const analysis::LinkSource& s) {
  if (s.from == "plan") return "set in the plan";
  if (s.from == "shaper") return fmt::format("tc rate on {} ({})", s.ifname, s.host);
  if (s.from == "interface") return fmt::format("link speed of {} ({})", s.ifname, s.host);
  return "";
}

std::string max_core_process_text(const analysis::Row& r) {
  if (!r.max_core_top) return "";
  return fmt::format("{} at {:.0f} %", r.max_core_top->comm, r.max_core_top->cpu_pct);
}

std::string cited_name(const analysis::Cited& c) {
  using N = analysis::CitedName;
  // Its layer: "TCP", "server disk" (a disk's, or its small files').
  const std::string layer = c.layer == "tcp" ? "TCP" : c.where + " disk";
  const std::string medium = transfer::protocol_display(c.layer) + " " + medium_text(c.where);
  switch (c.named) {
    case N::kNone:
      return "";
    case N::kLabel:
      return row_label(c);
    case N::kLayer:
      return layer;
    case N::kTheLayer:
      return "the " + layer;
    case N::kMedium:
      return medium;
    case N::kMediumOp:
      return medium + " " + c.op;
  }
  CP_CHECK(!"a CitedName without its words");
  return "";
}

std::string cited_verb(const analysis::Cited& c) {
  if (c.layer == "tcp") return "carries";
  if (c.layer != "disk") return "moves";
  if (c.op == "syncwrite") return "writes synchronously";
  return c.op + "s";  // "reads", "writes"
}

namespace {

// Not over its medium (the "medium.*" ids): what the row measured instead.
std::string not_over_medium_text(const analysis::TrustReason& t) {
  const std::string proto = transfer::protocol_display(t.row.layer);
  if (t.id == "medium.disk_on_ram") {
    return fmt::format("the {}'s disk_dir is on {}: the {} disk rows measured RAM, not a disk",
                       t.role, t.fs, t.role);
  }
  if (t.id == "medium.ram_share_on_disk") {
    return fmt::format("the {} share measured as RAM is on {} on the server, not in RAM", proto,
                       t.fs);
  }
  if (t.id == "medium.disk_share_on_ram") {
    return fmt::format(
        "the {} share measured as disk is on {} on the server: it never touches a disk", proto,
        t.fs);
  }
  if (t.id == "medium.other_disk") {
    return fmt::format(
        "the {} share measured as disk is on {} on the server, but the server disk stage measured "
        "{} (disk_dir)",
        proto, t.share_disk, t.stage_disk);
  }
  CP_CHECK(t.id == "medium.client_ram_dir");
  return fmt::format(
      "the client's ram_dir is on {}, not in RAM, so the client's disk is part of every protocol "
      "figure",
      t.fs);
}

}  // namespace

std::string medium_fix_text(const analysis::TrustReason& t) {
  if (t.id == "medium.disk_on_ram") {
    return fmt::format("set [{}] disk_dir to a directory on the disk under test", t.role);
  }
  if (t.id == "medium.ram_share_on_disk") {
    return "point the share's server_dir (and the share) at a tmpfs directory, or set its medium "
           "= disk";
  }
  if (t.id == "medium.disk_share_on_ram") {
    return "point the share at a directory on the disk under test, or set its medium = ram";
  }
  if (t.id == "medium.other_disk")
    return "set [server] disk_dir to a directory on the share's disk";
  CP_CHECK(t.id == "medium.client_ram_dir");
  return "set [client] ram_dir to a tmpfs directory (/dev/shm on most Linux systems)";
}

std::string trust_reason_text(const analysis::TrustReason& t) {
  if (starts_with(t.id, "medium.")) return not_over_medium_text(t);
  const std::string row = row_label(t.row);
  const std::string moves = fmt::format("{} moves {}", row, format_mbps(t.row.median));
  if (t.id == "cache.no_direct" || t.id == "cache.agent") {
    const std::string fits =
        t.memory_bytes > 0
            ? fmt::format(" and the {} files fit in the {}'s {} of RAM", format_size(t.row.size),
                          t.role, format_size(t.memory_bytes))
            : "";
    if (t.id == "cache.agent") {
      return fmt::format("{} of {} samples of {}: {}{}, so a cache may have served them",
                         t.cache_possible, t.row.n, row, t.why, fits);
    }
    return fmt::format(
        "{} of {} samples of {} ran without O_DIRECT (the filesystem refused it){}, so the page "
        "cache may have served them",
        t.cache_possible, t.row.n, row, fits);
  }
  if (t.id == "cache.beats_beneath") {
    return fmt::format("{}, faster than {} ({}) beyond both rows' spread: {}", moves,
                       row_label(t.beneath), format_mbps(t.beneath.median),
                       t.row.op == "read"
                           ? "the server's page cache served part of it"
                           : "the server's page cache absorbed the writes (write-back), so the "
                             "disk's own limit does not show with files of this size");
  }
  if (t.id == "cache.client") {
    return fmt::format(
        "{}, faster than TCP carries ({}): the client's page cache served part of it", moves,
        format_mbps(t.beneath.median));
  }
  CP_CHECK(t.id == "anomaly.beats_tcp");
  return fmt::format(
      "{}, faster than TCP carries ({}) beyond both rows' spread: the TCP figure is no ceiling "
      "here (noise, or the TCP probe limited by its own CPU)",
      moves, format_mbps(t.beneath.median));
}

std::string trust_reasons_text(const std::vector<analysis::TrustReason>& reasons) {
  std::string s;
  for (size_t i = 0; i < reasons.size(); ++i) s += (i ? "; " : "") + trust_reason_text(reasons[i]);
  return s;
}

std::string cap_label(const analysis::Headline& h) {
  return h.cap_row ? row_label(*h.cap_row) : h.stored_cap;
}

}  // namespace cp::report
