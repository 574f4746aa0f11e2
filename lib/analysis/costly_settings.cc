#include "analysis/costly_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "analysis/judge.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "transfer/driver.h"

namespace cp::analysis {
namespace {

using E = SettingEvidence;
using W = CostlyWhen;

// Costs several settings share, by id (report/hint_text.cc words them).
constexpr const char* kFlushCost = "flush_every_write";
constexpr const char* kCpuCost = "cpu_per_byte";
constexpr const char* kRequestCost = "requests_per_byte";
// Samba's default for a setting that caps one request ("smb2 max read"): the
// smb driver's table holds it (DriverSpec::hints.server_limits).
uint64_t samba_default(std::string_view key) {
  for (const transfer::ServerLimit& l : transfer::driver_spec("smb").hints.server_limits) {
    if (l.key == key) return l.server_default;
  }
  CP_CHECK(!"the smb driver declares no such server limit");
  return 0;
}

// The table, built at its first use (after the drivers have registered).
const std::vector<CostlySetting>& table() {
  // Samba's request caps, and their defaults as the table shows them.
  static const uint64_t max_read = samba_default("smb2 max read");
  static const uint64_t max_write = samba_default("smb2 max write");
  static const uint64_t max_trans = samba_default("smb2 max trans");
  static const std::string max_read_text = std::to_string(max_read);
  static const std::string max_write_text = std::to_string(max_write);
  static const std::string max_trans_text = std::to_string(max_trans);
  static const std::vector<CostlySetting> t = {
      {"samba", "smb", "sync always", "no", "write", "samba", W::kOneOf, "yes", 0, kFlushCost,
       E::kSyncWrites},
      {"samba", "smb", "strict sync", "yes", "write", "samba", W::kOneOf, "yes", 0,
       "flush_when_asked", E::kFlushingSync},
      {"samba", "smb", "server smb encrypt", "default", "", "samba", W::kOneOf,
       "required|desired|if_required|mandatory|auto|yes", 0, kCpuCost, E::kCpuEncrypted},
      {"samba", "smb", "server signing", "default", "", "samba", W::kOneOf,
       "mandatory|required|yes|auto|desired", 0, kCpuCost, E::kCpuSigned},
      {"samba", "smb", "aio read size", "1", "read", "samba", W::kOneOf, "0", 0, "sync_reads",
       E::kDiskBelow},
      {"samba", "smb", "aio write size", "1", "write", "samba", W::kOneOf, "0", 0, "sync_writes",
       E::kDiskBelow},
      {"samba", "smb", "use sendfile", "no", "read", "samba", W::kOneOf, "no", 0, "copy_smbd",
       E::kCpuServerRead},
      {"samba", "smb", "socket options", "TCP_NODELAY", "", "samba", W::kBuffer, "", 0,
       "fixed_socket_buffer", E::kWindow},
      {"samba", "smb", "smb2 max read", max_read_text.c_str(), "read", "samba", W::kBelowBytes, "",
       max_read, kRequestCost, E::kAlways},
      {"samba", "smb", "smb2 max write", max_write_text.c_str(), "write", "samba", W::kBelowBytes,
       "", max_write, kRequestCost, E::kAlways},
      {"samba", "smb", "smb2 max trans", max_trans_text.c_str(), "", "samba", W::kBelowBytes, "",
       max_trans, kRequestCost, E::kAlways},
      // NFS: what the session negotiated tells the server's largest request
      // (NFS-Ganesha MaxRead/MaxWrite, knfsd max_block_size; 1 MiB by default).
      {"nfs", "nfs", "MaxRead (NFS-Ganesha) / max_block_size (knfsd)", "1048576", "read",
       "property:rsize", W::kBelowBytes, "", 1u << 20, kRequestCost, E::kAlways},
      {"nfs", "nfs", "MaxWrite (NFS-Ganesha) / max_block_size (knfsd)", "1048576", "write",
       "property:wsize", W::kBelowBytes, "", 1u << 20, kRequestCost, E::kAlways},
      // NFS-Ganesha's own config, where the server's facts read it (a small
      // MaxRead/MaxWrite caps every client, whatever it asks for).
      {"nfs-ganesha", "nfs", "MaxRead", "1048576", "read", "config:nfs-ganesha:maxread",
       W::kBelowBytes, "", 1u << 20, kRequestCost, E::kAlways},
      {"nfs-ganesha", "nfs", "MaxWrite", "1048576", "write", "config:nfs-ganesha:maxwrite",
       W::kBelowBytes, "", 1u << 20, kRequestCost, E::kAlways},
      // exports(5) `sync` (its default) on the kernel's NFS server: a commit
      // of every write before the reply, as /proc/fs/nfs/exports shows it.
      {"knfsd", "nfs", "sync (exports)", "sync", "write", "config:knfsd:sync", W::kOneOf,
       "sync|mixed", 0, kFlushCost, E::kSyncWrites},
      // vsftpd: a per-session rate limit, and a copy per byte without sendfile.
      {"vsftpd", "ftp", "local_max_rate", "0", "", "config:vsftpd:local_max_rate", W::kPositive, "",
       0, "session_rate", E::kRateCap},
      {"vsftpd", "ftp", "use_sendfile", "YES", "read", "config:vsftpd:use_sendfile", W::kOneOf,
       "no", 0, "copy_vsftpd", E::kCpuServerRead},
      // proftpd: a per-session rate limit per command (KiB/s), and a copy
      // per byte without sendfile.
      {"proftpd", "ftp", "TransferRate RETR", "none", "read", "config:proftpd:transferrate retr",
       W::kPositive, "", 0, "download_rate_kib", E::kRateCap, 1024},
      {"proftpd", "ftp", "TransferRate STOR", "none", "write", "config:proftpd:transferrate stor",
       W::kPositive, "", 0, "upload_rate_kib", E::kRateCap, 1024},
      {"proftpd", "ftp", "UseSendfile", "on", "read", "config:proftpd:usesendfile", W::kOneOf,
       "off", 0, "copy_proftpd", E::kCpuServerRead},
      // vsftpd: TLS on the data connection (ssl_enable, force_local_data_ssl).
      {"vsftpd", "ftp", "ssl_enable / force_local_data_ssl", "NO", "", "property:tls", W::kOneOf,
       "explicit|implicit", 0, kCpuCost, E::kCpuTls},
  };
  return t;
}

// A setting's number ("20000", "12.5"); 0 when it is none.
double number(const std::string& value) {
  double v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  return ec == std::errc() && p == value.data() + value.size() ? v : 0;
}

bool one_of(const std::string& value, std::string_view list) {
  const std::string v = lower(value);
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find('|', i);
    if (j == std::string_view::npos) j = list.size();
    if (v == list.substr(i, j - i)) return true;
    i = j + 1;
  }
  return false;
}

// Samba parameter `name`'s effective value for the share row `r` used (the
// session's `share_name`) in the config of the smbd that served it (several
// may run on one host): the share section's where it sets one, else
// [global]'s, which shares inherit; `section` gets which. "" when unknown.
std::string samba_value(const Analysis& a, const Row& r, const std::string& name,
                        std::string* section = nullptr) {
  const HostFacts::SambaConfig& samba = a.server.samba_serving(r.server_pid);
  if (!samba.known) return {};
  if (auto share = r.properties.find("share_name"); share != r.properties.end()) {
    auto sec = samba.shares.find(lower(share->second));
    if (sec != samba.shares.end()) {
      if (auto it = sec->second.find(name); it != sec->second.end()) {
        if (section) *section = sec->first;
        return it->second;
      }
    }
  }
  auto it = samba.global.find(name);
  if (it == samba.global.end()) return {};
  if (section) *section = "global";
  return it->second;
}

// The value the run recorded for `s` ("" when it did not); `section` gets
// where a Samba value was set.
std::string value_of(const CostlySetting& s, const Analysis& a, const Row& r,
                     std::string* section) {
  const std::string_view source = s.source;
  if (source == "samba") return samba_value(a, r, s.parameter, section);
  if (source.rfind("config:", 0) == 0) {
    const std::string_view rest = source.substr(7);
    const size_t colon = rest.find(':');
    const std::string name(rest.substr(0, colon)), key(rest.substr(colon + 1));
    // The instance serving the row's connections where its samples name one
    // of this server's (several on one host), else the server's first.
    const std::map<std::string, std::string>* settings = nullptr;
    if (auto inst = a.server.server_instances.find(r.server_pid);
        inst != a.server.server_instances.end() && inst->second.server == name) {
      settings = &inst->second.settings;
    } else if (auto first = a.server.server_configs.find(name);
               first != a.server.server_configs.end()) {
      settings = &first->second;
    }
    if (!settings) return {};
    auto it = settings->find(key);
    return it == settings->end() ? std::string() : it->second;
  }
  if (source.rfind("property:", 0) == 0) {
    auto it = r.properties.find(std::string(source.substr(9)));
    return it == r.properties.end() ? std::string() : it->second;
  }
  return {};
}

// SO_SNDBUF=N (reads: the server sends) or SO_RCVBUF=N (writes) in `socket
// options`, bytes; 0 when it sets none.
uint64_t socket_buffer(const std::string& options, const std::string& op) {
  const std::string key = op == "read" ? "so_sndbuf=" : "so_rcvbuf=";
  const std::string o = lower(options);
  const size_t at = o.find(key);
  if (at == std::string::npos) return 0;
  return max_of_sysctl(o.substr(at + key.size(), o.find(' ', at) - at - key.size()));
}

bool costly_value(const CostlySetting& s, const std::string& value, const Row& r) {
  switch (s.when) {
    case W::kOneOf:
      return one_of(value, s.costly);
    case W::kBelowBytes: {
      const uint64_t v = max_of_sysctl(value);
      return v > 0 && v < s.bytes;
    }
    case W::kBuffer:
      return socket_buffer(value, r.op) > 0;
    case W::kPositive:
      return number(value) > 0;
  }
  return false;
}

bool cpu_bound(const Row& r, const Finding& f) {
  return f.layer == "cpu" || !r.cpu_bound.empty() || f.rule == "protocol.turn_taking";
}

bool session_on(const Row& r, const char* key) {
  auto it = r.properties.find(key);
  return it != r.properties.end() && !it->second.empty() && lower(it->second) != "none" &&
         it->second.rfind("unknown", 0) != 0;
}

// Writes to a disk share that a flush per request holds back; none (an
// empty id) when they are not, else the evidence with its figures. With the
// synchronous rate measured: a flush costs on this disk (that rate below
// kAtCeiling of the plain one), and the writes sit below both the disk's
// plain write rate and the protocol over RAM (the disk costs them something
// a plain write does not explain). A file server flushes per request, and
// its requests may be larger than the disk stage's block or run on several
// connections, so the writes may beat the disk stage's synchronous rate.
Hint sync_writes(const Analysis& a, const Row& r, const Finding& f) {
  if (r.op != "write" || r.where != "disk") return {};
  const std::string proto = protocol_name(r.layer);
  const Row* ram = proto_row(a.rows, r.layer, "ram", "write", r.size);
  if (const Row* sync = disk_row(a.rows, "server", "syncwrite", r.size)) {
    const Row* plain = disk_row(a.rows, "server", "write", r.size);
    const double z = r.rate.median, s = sync->rate.median;
    if (plain && s >= plain->rate.median * kAtCeiling) return {};
    if (plain && z >= plain->rate.median * kAtCeiling) return {};
    // The protocol over RAM held by a CPU (a loaded machine, a quota) is no
    // ceiling of the protocol's own: what sets the disk share's writes apart
    // is then the disk alone, whose flushes cost (above).
    const bool ram_ceiling = ram && ram->cpu_bound.empty();
    if (ram_ceiling && z >= ram->rate.median * kAtCeiling) return {};
    Hint e{"setting.sync_writes",
           {{"rate", z}, {"sync_rate", s}, {"block", double(kSyncWriteBlock)}},
           {{"proto", proto}, {"near", z <= s * kNearSyncRate ? "near" : "below"}}};
    if (ram) {
      e.numbers["ram_rate"] = ram->rate.median;
      if (!ram_ceiling) e.words["ram_cpu"] = "yes";
    }
    if (plain) e.numbers["plain_rate"] = plain->rate.median;
    return e;
  }
  if (f.rule != "protocol.plus_disk") return {};
  return {"setting.sync_unmeasured", {{"rate", r.rate.median}}, {{"proto", proto}}};
}

Hint evidence_of(const CostlySetting& s, const Analysis& a, const Row& r, const Finding& f,
                 const std::string& value) {
  const std::string proto = protocol_name(r.layer);
  switch (s.evidence) {
    case E::kAlways:
      return {"setting.request_size",
              {{"request", double(max_of_sysctl(value))}, {"default", double(s.bytes)}},
              {}};
    case E::kSyncWrites:
      return sync_writes(a, r, f);
    case E::kFlushingSync: {
      if (one_of(samba_value(a, r, "sync always"), "yes")) return {};
      // chokepoint's own client never asks for a flush: only writes held at the
      // synchronous rate show one per request.
      const Row* sync = disk_row(a.rows, "server", "syncwrite", r.size);
      if (!sync || r.rate.median > sync->rate.median * kNearSyncRate) return {};
      Hint e = sync_writes(a, r, f);
      if (!e.id.empty()) e.words["client_flushes"] = "yes";
      return e;
    }
    case E::kCpuEncrypted:
      if (!cpu_bound(r, f) || !session_on(r, "smb_encryption")) return {};
      return {"setting.cpu_encrypted", {}, {{"mode", r.properties.at("smb_encryption")}}};
    case E::kCpuSigned:
      if (!cpu_bound(r, f) || !session_on(r, "smb_signing")) return {};
      return {"setting.cpu_signed", {}, {{"mode", r.properties.at("smb_signing")}}};
    case E::kCpuServerRead:
      if (r.op != "read" || !cpu_bound(r, f) || session_on(r, "smb_signing") ||
          session_on(r, "smb_encryption") || session_on(r, "tls")) {
        return {};
      }
      if (f.cpu.role != "server" || (f.cpu.host != "server" && f.cpu.host != "both")) return {};
      return {"setting.cpu_server_read", {}, {{"process", f.cpu.process}, {"kind", f.cpu.kind}}};
    case E::kDiskBelow:
      if (f.rule != "protocol.plus_disk") return {};
      return {"setting.disk_below", {}, {{"proto", proto}}};
    case E::kWindow: {
      const Row* t = tcp_row(a.rows, r.op == "read" ? "server->client" : "client->server");
      const double rtt_us = t ? (t->rtt_idle_us > 0 ? t->rtt_idle_us : t->rtt_us) : 0;
      const uint64_t buffer = socket_buffer(value, r.op);
      if (!t || rtt_us <= 0 || t->rate.median <= 0) return {};
      const double window_rate = double(buffer) / (rtt_us / 1e6);
      if (window_rate >= t->rate.median || r.rate.median > window_rate * kNearSyncRate) return {};
      return {"setting.window",
              {{"buffer", double(buffer)},
               {"rtt_ms", rtt_us / 1000},
               {"window_rate", window_rate},
               {"tcp_rate", t->rate.median},
               {"rate", r.rate.median}},
              {{"proto", proto}}};
    }
    case E::kCpuTls:
      if (!cpu_bound(r, f)) return {};
      return {"setting.cpu_tls", {}, {{"value", value}}};
    case E::kRateCap: {
      const double cap = number(value) * s.unit;
      // A limiter holds its sessions close under the limit: far below it,
      // something else holds the row.
      if (cap <= 0 || r.rate.median > cap * kNearRateCap || r.rate.median < cap * kShortTcp) {
        return {};
      }
      return {"setting.rate_cap", {{"rate", r.rate.median}, {"cap", cap}}, {{"proto", proto}}};
    }
    case E::kNotRead:
      return {};
  }
  return {};
}

}  // namespace

const std::vector<CostlySetting>& costly_settings() { return table(); }

std::vector<SettingFound> settings_found(const Analysis& a, const Row& r, const Finding& f) {
  std::vector<SettingFound> out;
  for (const CostlySetting& s : table()) {
    if (r.layer != s.driver || (*s.ops && r.op != s.ops)) continue;
    std::string section;
    const std::string value = value_of(s, a, r, &section);
    if (value.empty() || !costly_value(s, value, r)) continue;
    Hint evidence = evidence_of(s, a, r, f, value);
    if (evidence.id.empty()) continue;
    out.push_back(
        {s.server, s.parameter, section, value, s.default_value, s.cost, std::move(evidence)});
  }
  return out;
}

std::optional<SettingFound> rate_cap_found(const Analysis& a, const Row& r, double* cap) {
  const Finding none;  // kRateCap reads the row alone
  for (const CostlySetting& s : table()) {
    if (s.evidence != E::kRateCap || r.layer != s.driver || (*s.ops && r.op != s.ops)) continue;
    std::string section;
    const std::string value = value_of(s, a, r, &section);
    if (value.empty() || !costly_value(s, value, r)) continue;
    Hint evidence = evidence_of(s, a, r, none, value);
    if (evidence.id.empty()) continue;
    if (cap) *cap = number(value) * s.unit;
    return SettingFound{s.server, s.parameter,        section, value, s.default_value,
                        s.cost,   std::move(evidence)};
  }
  return std::nullopt;
}

std::vector<std::string> costly_samba_parameters() {
  std::vector<std::string> out;
  for (const CostlySetting& s : table()) {
    if (std::string_view(s.source) == "samba") out.emplace_back(s.parameter);
  }
  return out;
}

}  // namespace cp::analysis
