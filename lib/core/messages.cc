#include "core/messages_json.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/error.h"
#include "core/messages_in.h"

namespace cp::msg {
namespace json = boost::json;
using codec::array_of;
using codec::In;
using codec::strings;

json::value parse_stored(std::string_view text) {
  if (text.empty()) return nullptr;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? json::value(nullptr) : v;
}

// ---- disk ------------------------------------------------------------------

json::object to_json(const DiskRequest& m) {
  json::object o{{"dir", m.dir}, {"op", m.op}, {"name", m.name}, {"block", m.block}};
  if (m.op == "write" || m.op == "syncwrite") o["size"] = m.size;
  if (m.delete_after) o["delete_after"] = true;
  return o;
}
void from_json(const json::value& v, DiskRequest& m, Source src, std::string_view what) {
  In in(v, src, what);
  in.need("dir", m.dir)
      .need("op", m.op)
      .need("name", m.name)
      .opt("block", m.block)
      .opt("delete_after", m.delete_after);
  if (m.op == "write" || m.op == "syncwrite")
    in.need("size", m.size);  // a write says how much
  else
    in.opt("size", m.size);
}

json::object to_json(const DiskResult& m) {
  return {{"bytes", m.bytes},           {"seconds", m.seconds},
          {"direct", m.direct},         {"cache_possible", m.cache_possible},
          {"method", m.method},         {"huge_page", m.huge_page},
          {"cpu", msg::to_json(m.cpu)}, {"cache_reason", m.cache_reason}};
}
void from_json(const json::value& v, DiskResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("direct", m.direct)
      .need("cache_possible", m.cache_possible)
      .need("method", m.method)
      .opt("huge_page", m.huge_page)
      .need("cpu", m.cpu)
      .opt("cache_reason", m.cache_reason);
}

json::object to_json(const DiskDetails& m) {
  return {{"file", m.file},           {"method", m.method}, {"direct", m.direct},
          {"huge_page", m.huge_page}, {"block", m.block},   {"cache_reason", m.cache_reason}};
}
void from_json(const json::value& v, DiskDetails& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("file", m.file)
      .opt("method", m.method)
      .opt("direct", m.direct)
      .opt("huge_page", m.huge_page)
      .opt("block", m.block)
      .opt("cache_reason", m.cache_reason);
}

// ---- share files -----------------------------------------------------------

json::object to_json(const FileRequest& m) {
  json::object o{{"dir", m.dir}, {"name", m.name}};
  if (m.size) o["size"] = m.size;
  if (m.block != (1u << 20)) o["block"] = m.block;
  if (m.evict) o["evict"] = true;
  if (m.shared) o["shared"] = true;
  return o;
}
void from_json(const json::value& v, FileRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("dir", m.dir)
      .need("name", m.name)
      .opt("size", m.size)
      .opt("block", m.block)
      .opt("evict", m.evict)
      .opt("shared", m.shared);
}

json::object to_json(const FileResult& m) {
  json::object o{{"bytes", m.bytes}, {"seconds", m.seconds}, {"checksum", m.checksum}};
  if (m.cache_possible) {
    o["cache_possible"] = true;
    o["cache_reason"] = m.cache_reason;
  }
  return o;
}
void from_json(const json::value& v, FileResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("checksum", m.checksum)
      .opt("cache_possible", m.cache_possible)
      .opt("cache_reason", m.cache_reason);
}

json::object to_json(const RemoveFileResult& m) { return {{"removed", m.removed}}; }
void from_json(const json::value& v, RemoveFileResult& m, Source src, std::string_view what) {
  In(v, src, what).need("removed", m.removed);
}

// ---- run directories -------------------------------------------------------

json::object to_json(const PrepareRequest& m) {
  json::object o{{"dirs", strings(m.dirs)}, {"run", m.run}};
  if (m.shared) o["shared"] = true;
  return o;
}
void from_json(const json::value& v, PrepareRequest& m, Source src, std::string_view what) {
  In(v, src, what).need("dirs", m.dirs).opt("shared", m.shared).opt("run", m.run);
}

json::object to_json(const RunDirEntry& m) {
  json::object o{{"path", m.path}};
  if (!m.reason.empty()) o["reason"] = m.reason;
  if (!m.error.empty()) o["error"] = m.error;
  if (!m.refused.empty()) o["refused"] = m.refused;
  return o;
}
void from_json(const json::value& v, RunDirEntry& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("path", m.path)
      .opt("reason", m.reason)
      .opt("error", m.error)
      .opt("refused", m.refused);
}

json::object to_json(const PrepareResult& m) {
  json::object o{{"dirs", strings(m.dirs)}, {"swept", array_of(m.swept)}};
  if (!m.refused.empty()) o["refused"] = array_of(m.refused);
  return o;
}
void from_json(const json::value& v, PrepareResult& m, Source src, std::string_view what) {
  In(v, src, what).need("dirs", m.dirs).opt("swept", m.swept).opt("refused", m.refused);
}

json::object to_json(const CleanOrphansRequest& m) { return {{"dirs", strings(m.dirs)}}; }
void from_json(const json::value& v, CleanOrphansRequest& m, Source src, std::string_view what) {
  In(v, src, what).need("dirs", m.dirs);
}

json::object to_json(const CleanOrphansResult& m) {
  return {{"removed", array_of(m.removed)}, {"kept", array_of(m.kept)}};
}
void from_json(const json::value& v, CleanOrphansResult& m, Source src, std::string_view what) {
  In(v, src, what).need("removed", m.removed).need("kept", m.kept);
  // A removed directory says why it was removed (clean prints it).
  for (size_t i = 0; i < m.removed.size() && src == Source::kPeer; ++i) {
    if (m.removed[i].reason.empty()) {
      throw Error(ErrorKind::kPeer,
                  fmt::format("message '{}.removed[{}]': field 'reason' missing", what, i),
                  "the orchestrator and agent builds differ: redeploy the agent");
    }
  }
}

json::object to_json(const OwnerRecord& m) {
  return {{"pid", m.pid},
          {"start_ticks", m.start_ticks},
          {"boot_id", m.boot_id},
          {"host", m.host},
          {"pid_ns", m.pid_ns},
          {"run", m.run},
          {"started_at", m.started_at}};
}
void from_json(const json::value& v, OwnerRecord& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("pid", m.pid)
      .opt("start_ticks", m.start_ticks)
      .opt("boot_id", m.boot_id)
      .opt("host", m.host)
      .opt("pid_ns", m.pid_ns)
      .opt("run", m.run)
      .opt("started_at", m.started_at);
}

json::object to_json(const CheckSpaceRequest& m) {
  json::object o{{"dir", m.dir}, {"bytes", m.bytes}};
  if (!m.hint.empty()) o["hint"] = m.hint;
  return o;
}
void from_json(const json::value& v, CheckSpaceRequest& m, Source src, std::string_view what) {
  In(v, src, what).need("dir", m.dir).need("bytes", m.bytes).opt("hint", m.hint);
}

json::object to_json(const CheckSpaceResult& m) {
  json::object o{{"total", m.total}, {"avail", m.avail}, {"fs_type", m.fs_type}};
  o["disk"] = m.disk.empty() ? json::value(nullptr) : json::value(m.disk);  // null: none
  return o;
}
void from_json(const json::value& v, CheckSpaceResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("total", m.total)
      .need("avail", m.avail)
      .opt("fs_type", m.fs_type)
      .opt("disk", m.disk);
}

// ---- the agent itself ------------------------------------------------------

json::object to_json(const RevertedKnob& m) {
  return {{"knob", m.knob}, {"target", m.target}, {"original", m.original}, {"error", m.error}};
}
void from_json(const json::value& v, RevertedKnob& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("knob", m.knob)
      .need("target", m.target)
      .need("original", m.original)
      .opt("error", m.error);
}

json::object to_json(const RefusedJournal& m) {
  return {{"reason", m.reason}, {"knob", m.knob}, {"action", m.action}, {"detail", m.detail}};
}
void from_json(const json::value& v, RefusedJournal& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("reason", m.reason)
      .opt("knob", m.knob)
      .opt("action", m.action)
      .opt("detail", m.detail);
}

json::object to_json(const TuneStartReport& m) {
  return {{"reverted", array_of(m.reverted)},
          {"refused", array_of(m.refused)},
          {"error", m.error},
          {"journal", m.journal}};
}
void from_json(const json::value& v, TuneStartReport& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("reverted", m.reverted)
      .opt("refused", m.refused)
      .opt("error", m.error)
      .opt("journal", m.journal);
}

json::object to_json(const Hello& m) {
  return {{"version", m.version},
          {"build", m.build},
          {"proto", m.proto},
          {"pid", m.pid},
          {"hostname", m.hostname},
          {"os", m.os},
          {"arch", m.arch},
          {"role", m.role},
          {"drivers", strings(m.drivers)},
          {"tune_at_start", to_json(m.tune_at_start)}};
}
void from_json(const json::value& v, Hello& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("version", m.version)
      .need("build", m.build)
      .need("proto", m.proto)
      .need("pid", m.pid)
      .opt("hostname", m.hostname)
      .opt("os", m.os)
      .opt("arch", m.arch)
      .need("role", m.role)
      .opt("drivers", m.drivers)
      .opt("tune_at_start", m.tune_at_start);
}

json::object to_json(const AgentStats& m) { return {{"max_rss_kb", m.max_rss_kb}}; }
void from_json(const json::value& v, AgentStats& m, Source src, std::string_view what) {
  In(v, src, what).need("max_rss_kb", m.max_rss_kb);
}

json::object to_json(const SmbStatusRequest& m) {
  json::object o;
  if (!m.conf.empty()) o["conf"] = m.conf;
  return o;
}
void from_json(const json::value& v, SmbStatusRequest& m, Source src, std::string_view what) {
  In(v, src, what).opt("conf", m.conf);
}

json::object to_json(const SmbSessionStatus& m) {
  return {{"client", m.client},         {"dialect", m.dialect},
          {"signing", m.signing},       {"signing_degree", m.signing_degree},
          {"encryption", m.encryption}, {"encryption_degree", m.encryption_degree}};
}
void from_json(const json::value& v, SmbSessionStatus& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("client", m.client)
      .need("dialect", m.dialect)
      .need("signing", m.signing)
      .opt("signing_degree", m.signing_degree)
      .need("encryption", m.encryption)
      .opt("encryption_degree", m.encryption_degree);
}

json::object to_json(const SmbStatusResult& m) { return {{"sessions", array_of(m.sessions)}}; }
void from_json(const json::value& v, SmbStatusResult& m, Source src, std::string_view what) {
  In(v, src, what).need("sessions", m.sessions);
}

// ---- frames ----------------------------------------------------------------

json::object to_json(const Progress& m) { return {{"bytes", m.bytes}, {"seconds", m.seconds}}; }
void from_json(const json::value& v, Progress& m, Source src, std::string_view what) {
  In(v, src, what).need("bytes", m.bytes).need("seconds", m.seconds);
}

json::object to_json(const ErrorInfo& m) {
  return {{"kind", m.kind}, {"message", m.message}, {"hint", m.hint}};
}
void from_json(const json::value& v, ErrorInfo& m, Source src, std::string_view what) {
  In(v, src, what).need("kind", m.kind).need("message", m.message).opt("hint", m.hint);
}

// ---- tuning ----------------------------------------------------------------

json::object to_json(const TuneRequest& m) {
  return {{"knob", m.knob},
          {"value", m.value},
          {"disk_dir", m.disk_dir},
          {"samba_conf", m.samba_conf},
          {"data_address", m.data_address},
          {"console", m.console},
          {"confirm_s", m.confirm_s},
          {"afp_conf", m.afp_conf},
          {"afp_restart", m.afp_restart}};
}
void from_json(const json::value& v, TuneRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("knob", m.knob)
      .need("value", m.value)
      .opt("disk_dir", m.disk_dir)
      .opt("samba_conf", m.samba_conf)
      .opt("data_address", m.data_address)
      .opt("console", m.console)
      .opt("confirm_s", m.confirm_s)
      .opt("afp_conf", m.afp_conf)
      .opt("afp_restart", m.afp_restart);
}

json::object to_json(const TunePlanResult& m) {
  json::object o{{"target", m.target},        {"original", m.original},
                 {"apply", strings(m.apply)}, {"revert", strings(m.revert)},
                 {"journal", m.journal},      {"cuts_ssh", m.cuts_ssh}};
  if (m.watchdog_s) o["watchdog_s"] = m.watchdog_s;
  return o;
}
void from_json(const json::value& v, TunePlanResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("target", m.target)
      .need("original", m.original)
      .need("apply", m.apply)
      .need("revert", m.revert)
      .need("journal", m.journal)
      .opt("cuts_ssh", m.cuts_ssh)
      .opt("watchdog_s", m.watchdog_s);
}

json::object to_json(const TuneConfirmResult& m) { return {{"confirmed", m.confirmed}}; }
void from_json(const json::value& v, TuneConfirmResult& m, Source src, std::string_view what) {
  In(v, src, what).need("confirmed", m.confirmed);
}

json::object to_json(const TuneRevertResult& m) {
  return {{"reverted", array_of(m.reverted)},
          {"reverted_at_start", array_of(m.reverted_at_start)},
          {"refused", array_of(m.refused)},
          {"at_start_error", m.at_start_error},
          {"journal", m.journal}};
}
void from_json(const json::value& v, TuneRevertResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("reverted", m.reverted)
      .opt("reverted_at_start", m.reverted_at_start)
      .opt("refused", m.refused)
      .opt("at_start_error", m.at_start_error)
      .need("journal", m.journal);
}

// ---- protocol samples ------------------------------------------------------

json::object to_json(const ShareRef& m) {
  json::object o{{"name", m.name}, {"url", m.url}, {"driver", m.driver}, {"user", m.user}};
  if (!m.password.empty()) o["password"] = m.password;
  o["options"] = strings(m.options);
  return o;
}
void from_json(const json::value& v, ShareRef& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("name", m.name)
      .need("url", m.url)
      .need("driver", m.driver)
      .opt("user", m.user)
      .opt("password", m.password)
      .opt("options", m.options);
}

json::object to_json(const TransferRequest& m) {
  return {{"share", to_json(m.share)},
          {"op", m.op},
          {"remote", m.remote},
          {"dir", m.dir},
          {"name", m.name},
          {"size", m.size},
          {"block", m.block},
          {"delete_after", m.delete_after}};
}
void from_json(const json::value& v, TransferRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("share", m.share)
      .need("op", m.op)
      .need("remote", m.remote)
      .need("dir", m.dir)
      .need("name", m.name)
      .opt("size", m.size)
      .opt("block", m.block)
      .opt("delete_after", m.delete_after);
}

json::object to_json(const TransferResult& m) {
  return {{"bytes", m.bytes},
          {"seconds", m.seconds},
          {"checksum", m.checksum},
          {"properties", strings(m.properties)},
          {"cpu", msg::to_json(m.cpu)}};
}
void from_json(const json::value& v, TransferResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("checksum", m.checksum)
      .need("properties", m.properties)
      .need("cpu", m.cpu);
}

json::object to_json(const TransferDetails& m) {
  return {{"file", m.file},
          {"share", m.share},
          {"checksum", m.checksum},
          {"server_fs", m.server_fs},
          {"server_disk", m.server_disk},
          {"cache_reason", m.cache_reason},
          {"properties", strings(m.properties)}};
}
void from_json(const json::value& v, TransferDetails& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("file", m.file)
      .opt("share", m.share)
      .opt("checksum", m.checksum)
      .opt("server_fs", m.server_fs)
      .opt("server_disk", m.server_disk)
      .opt("cache_reason", m.cache_reason)
      .opt("properties", m.properties);
}

json::object to_json(const SizeScanRequest& m) {
  return {{"share", to_json(m.share)}, {"remote", m.remote}, {"pattern", m.pattern},
          {"request", m.request},      {"bytes", m.bytes},   {"file_size", m.file_size}};
}
void from_json(const json::value& v, SizeScanRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("share", m.share)
      .need("remote", m.remote)
      .need("pattern", m.pattern)
      .need("request", m.request)
      .need("bytes", m.bytes)
      .need("file_size", m.file_size);
}

json::object to_json(const SizeScanResult& m) {
  return {{"bytes", m.bytes},
          {"seconds", m.seconds},
          {"checksum", m.checksum},
          {"cpu", msg::to_json(m.cpu)}};
}
void from_json(const json::value& v, SizeScanResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("checksum", m.checksum)
      .need("cpu", m.cpu);
}

json::object to_json(const SizeScanDetails& m) {
  return {{"share", m.share}, {"pattern", m.pattern}, {"request", m.request}};
}
void from_json(const json::value& v, SizeScanDetails& m, Source src, std::string_view what) {
  In(v, src, what).opt("share", m.share).opt("pattern", m.pattern).opt("request", m.request);
}

// ---- facts -----------------------------------------------------------------

json::object to_json(const FactsRequest& m) {
  json::object o{
      {"ram_dir", m.ram_dir}, {"disk_dir", m.disk_dir}, {"peer_address", m.peer_address}};
  if (!m.samba_conf.empty()) o["samba_conf"] = m.samba_conf;
  if (!m.samba) o["samba"] = false;
  return o;
}
void from_json(const json::value& v, FactsRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("ram_dir", m.ram_dir)
      .opt("disk_dir", m.disk_dir)
      .opt("peer_address", m.peer_address)
      .opt("samba_conf", m.samba_conf)
      .opt("samba", m.samba);
}

std::vector<std::string> tune_start_lines(const TuneStartReport& r) {
  std::vector<std::string> out;
  for (const auto& k : r.reverted) {
    out.push_back(fmt::format("{} tune knob {} on {} to {}{}",
                              k.error.empty() ? "restored" : "could not restore", k.knob, k.target,
                              k.original, k.error.empty() ? "" : ": " + k.error));
  }
  for (const auto& k : r.refused) {
    out.push_back(fmt::format("refused the tune journal {} ({}{}{}): {}", r.journal, k.reason,
                              k.knob.empty() ? "" : ", " + k.knob,
                              k.action.empty() ? "" : ", " + k.action, k.detail));
  }
  if (!r.error.empty()) out.push_back("tune journal: " + r.error);
  return out;
}

}  // namespace cp::msg
