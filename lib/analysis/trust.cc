// Numbers that may not be what they seem: figures a cache may have served,
// figures faster than the layer beneath where no cache can explain it, rows
// not over the medium they claim, and verdicts resting on any of them.
#include <map>
#include <string>
#include <vector>

#include "analysis/judge.h"
#include "core/bootstrap.h"
#include "core/units.h"
#include "transfer/driver.h"

namespace cp::analysis {
namespace {

Finding trust_finding(const char* rule, const char* path, const char* layer, const Row& r) {
  Finding f;
  f.rule = rule;
  f.path = path;
  f.layer = layer;
  f.rows = {r.key};
  f.subject = cite(r);
  return f;
}

// One config finding per reason, listing every row it touches: a reason is
// the same where its words would be (the row only where they name it).
void config_finding(std::vector<Finding>& out, std::map<std::string, size_t>& said, const Row& r,
                    const TrustReason& t) {
  const bool names_row = t.id == "medium.ram_share_on_disk" || t.id == "medium.disk_share_on_ram" ||
                         t.id == "medium.other_disk";
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", t.id, t.role, t.fs,
                                      names_row ? t.row.layer : "", t.share_disk, t.stage_disk);
  if (auto it = said.find(key); it != said.end()) {
    out[it->second].rows.push_back(r.key);
    return;
  }
  said[key] = out.size();
  Finding f = trust_finding("trust.medium", "config", "config", r);
  f.reasons = {t};
  out.push_back(std::move(f));
}

// Marks rows whose figure a cache may have produced (samples without O_DIRECT
// on files that fit in RAM; a layer faster than the one beneath beyond both
// rows' noise where a cache sits between them), and rows faster than the layer
// beneath where no cache can explain it (anomaly). Adds a finding for each.
void judge_cache(Analysis& a, std::vector<Finding>& out) {
  for (auto& r : a.rows) {
    if (r.rate.n == 0) continue;
    std::vector<TrustReason> cache, anomaly;
    // Why, citing `r` (and the row it beat).
    auto reason = [&](const char* id, const Row* beneath) {
      TrustReason t;
      t.id = id;
      t.row = cite(r);
      if (beneath) t.beneath = cite(*beneath);
      return t;
    };
    const std::string role = r.layer == "disk" ? r.where : "server";
    const uint64_t mem = host_facts(a, role).memory_bytes;
    if (r.cache_possible > 0) {
      if (mem > 0 && r.size >= mem) {
        Finding f = trust_finding("trust.cache_ruled_out", "cache", "cache", r);
        f.numbers["cache_possible"] = double(r.cache_possible);
        f.numbers["memory_bytes"] = double(mem);
        f.words["role"] = role;
        out.push_back(std::move(f));
      } else {
        // The agent's own reason where it gave one (ZFS's ARC keeps what
        // eviction drops), else the one a disk sample without O_DIRECT has.
        TrustReason t =
            reason(r.cache_possible_why.empty() ? "cache.no_direct" : "cache.agent", nullptr);
        t.cache_possible = r.cache_possible;
        t.memory_bytes = mem;  // the files fit in it
        t.role = role;
        t.why = r.cache_possible_why;
        cache.push_back(std::move(t));
      }
    }
    const bool read = r.op == "read";
    auto faster = [&](const Row& beneath) {
      const RatioInterval ri = bootstrap_median_ratio(r.samples, beneath.samples);
      if (level_of(ri.ratio, ri.lo, ri.hi, r.rate.median, beneath) != Level::kFaster) return false;
      // Every file evicted before its read: only beyond the slack can a cache explain it.
      const bool evicted = read && beneath.layer == "disk" && r.cache_possible == 0;
      return !evicted || ri.lo > kEvictedReadSlack;
    };
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
        cache.push_back(reason("cache.beats_beneath", beneath));
        break;
      }
    } else if (is_protocol_row(r) && r.where == "ram") {
      const Row* t = find_row(a, r.below);
      if (t && faster(*t)) {
        // Only a client that caches (a mounted filesystem's page cache) can beat TCP.
        const transfer::DriverSpec* spec = transfer::find_driver_spec(r.layer);
        if (spec && spec->hints.client_cache && read) {
          cache.push_back(reason("cache.client", t));
        } else {
          anomaly.push_back(reason("anomaly.beats_tcp", t));
        }
      }
    }
    if (!cache.empty()) {
      r.cache_suspected = true;
      r.cache_reasons = cache;
      Finding f = trust_finding("trust.page_cache", "cache", "cache", r);
      f.reasons = cache;
      f.numbers["cache_possible"] = double(r.cache_possible);
      if (r.cache_possible > 0 && mem > 0 && r.size < mem) {
        f.numbers["memory_bytes"] = double(mem);  // the files fit in it
        f.words["role"] = role;
      }
      out.push_back(std::move(f));
    }
    if (!anomaly.empty()) {
      r.anomaly = true;
      r.anomaly_reason = anomaly.front();
      Finding f = trust_finding("trust.anomaly", "cache", "anomaly", r);
      f.reasons = {anomaly.front()};
      out.push_back(std::move(f));
    }
  }
}

bool ram_backed(const std::string& fs) { return fs == "tmpfs" || fs == "ramfs"; }

// Protocol rows over a medium other than the one they claim: a "ram" share
// whose directory is on a disk measures that disk too, a "disk" share on tmpfs
// never touches a disk, and a client RAM dir on a disk puts the client's disk
// under every protocol row. Unknown filesystems ("", "unknown") are not judged.
void judge_medium(Analysis& a, std::vector<Finding>& out) {
  std::map<std::string, size_t> said;  // reason -> its config finding
  auto known = [](const std::string& fs) { return !fs.empty() && fs != "unknown"; };
  for (auto& r : a.rows) {
    TrustReason t;
    t.row = cite(r);
    if (r.layer == "disk" && r.rate.n > 0) {
      // A disk stage on tmpfs/ramfs measured RAM (tmpfs takes O_DIRECT since
      // Linux 6.6, so no sample says "cache"): no verdict may call it a disk.
      const std::string& fs = (r.where == "server" ? a.server : a.client).disk_fs;
      if (!ram_backed(fs)) continue;
      t.id = "medium.disk_on_ram";
      t.role = r.where;
      t.fs = fs;
    } else if (!is_protocol(r.layer) || r.rate.n == 0) {
      continue;
    } else if (r.where == "ram" && known(r.server_fs) && !ram_backed(r.server_fs)) {
      t.id = "medium.ram_share_on_disk";
      t.fs = r.server_fs;
    } else if (r.where == "disk" && ram_backed(r.server_fs)) {
      t.id = "medium.disk_share_on_ram";
      t.fs = r.server_fs;
    } else if (r.where == "disk" && !r.server_disk.empty() && !a.server.disk_device.empty() &&
               r.server_disk != a.server.disk_device) {
      // The disk stage measured another disk than the one the share reads: the
      // protocol-from-disk figure cannot be held against it.
      t.id = "medium.other_disk";
      t.share_disk = r.server_disk;
      t.stage_disk = a.server.disk_device;
    } else if (known(a.client.ram_fs) && !ram_backed(a.client.ram_fs)) {
      t.id = "medium.client_ram_dir";
      t.fs = a.client.ram_fs;
    } else {
      continue;
    }
    r.medium_reason = t;
    config_finding(out, said, r, t);
  }
}

}  // namespace

std::vector<Finding> judge_trust(Analysis& a) {
  std::vector<Finding> out;
  judge_cache(a, out);
  judge_medium(a, out);
  return out;
}

void mark_untrusted(Analysis& a) {
  for (auto& f : a.findings) {
    if (f.path == "cache" || f.layer == "undecided") continue;
    for (const auto& key : f.rows) {
      const Row* r = find_row(a, key);
      if (r && r->cache_suspected) f.untrusted.push_back(cite(*r));
    }
  }
}

}  // namespace cp::analysis
