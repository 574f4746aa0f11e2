#include "core/messages_json.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/error.h"
#include "core/json_util.h"
#include "core/messages_in.h"

namespace cp::msg {
namespace json = boost::json;

json::value parse_stored(std::string_view text) { return parse_json_or_null(text); }

// ---- disk ------------------------------------------------------------------

CP_MESSAGE_FIELDS(DiskRequest) {
  v.need("dir", m.dir).need("op", m.op).need("name", m.name).opt("block", m.block);
  const bool write = m.op == "write" || m.op == "syncwrite";  // a write says how much
  v.need_if(write, "size", m.size).omit_empty("delete_after", m.delete_after);
}

CP_MESSAGE_FIELDS(DiskResult) {
  v.need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("direct", m.direct)
      .need("cache_possible", m.cache_possible)
      .need("method", m.method)
      .opt("huge_page", m.huge_page)
      .need("cpu", m.cpu)
      .opt("cache_reason", m.cache_reason);
}

CP_MESSAGE_FIELDS(DiskDetails) {
  v.opt("file", m.file)
      .opt("method", m.method)
      .opt("direct", m.direct)
      .opt("huge_page", m.huge_page)
      .opt("block", m.block)
      .opt("cache_reason", m.cache_reason);
}

// ---- share files -----------------------------------------------------------

CP_MESSAGE_FIELDS(FileRequest) {
  v.need("dir", m.dir)
      .need("name", m.name)
      .omit_empty("size", m.size)
      .omit_default("block", m.block, uint64_t{1} << 20)
      .omit_empty("evict", m.evict)
      .omit_empty("shared", m.shared);
}

CP_MESSAGE_FIELDS(FileResult) {
  v.need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("checksum", m.checksum)
      .omit_empty("cache_possible", m.cache_possible)
      .opt_if(m.cache_possible, "cache_reason", m.cache_reason);
}

CP_MESSAGE_FIELDS(RemoveFileResult) { v.need("removed", m.removed); }

// ---- run directories -------------------------------------------------------

CP_MESSAGE_FIELDS(PrepareRequest) {
  v.need("dirs", m.dirs).opt("run", m.run).omit_empty("shared", m.shared);
}

CP_MESSAGE_FIELDS(RunDirEntry) {
  v.need("path", m.path)
      .omit_empty("reason", m.reason)
      .omit_empty("error", m.error)
      .omit_empty("refused", m.refused);
}

CP_MESSAGE_FIELDS(PrepareResult) {
  v.need("dirs", m.dirs).opt("swept", m.swept).omit_empty("refused", m.refused);
}

CP_MESSAGE_FIELDS(CleanOrphansRequest) { v.need("dirs", m.dirs); }

CP_MESSAGE_FIELDS(CleanOrphansResult) {
  v.need("removed", m.removed).need("kept", m.kept);
  if constexpr (V::kReads) {
    // A removed directory says why it was removed (clean prints it).
    for (size_t i = 0; i < m.removed.size() && v.peer(); ++i) {
      if (m.removed[i].reason.empty()) {
        throw Error(ErrorKind::kPeer,
                    fmt::format("message '{}.removed[{}]': field 'reason' missing", v.what(), i),
                    "the orchestrator and agent builds differ: redeploy the agent");
      }
    }
  }
}

CP_MESSAGE_FIELDS(OwnerRecord) {
  v.opt("pid", m.pid)
      .opt("start_ticks", m.start_ticks)
      .opt("boot_id", m.boot_id)
      .opt("host", m.host)
      .opt("pid_ns", m.pid_ns)
      .opt("run", m.run)
      .opt("started_at", m.started_at);
}

CP_MESSAGE_FIELDS(CheckSpaceRequest) {
  v.need("dir", m.dir).need("bytes", m.bytes).omit_empty("hint", m.hint);
}

CP_MESSAGE_FIELDS(CheckSpaceResult) {
  v.need("total", m.total)
      .need("avail", m.avail)
      .opt("fs_type", m.fs_type)
      .null_empty("disk", m.disk);  // null: none
}

// ---- the agent itself ------------------------------------------------------

CP_MESSAGE_FIELDS(RevertedKnob) {
  v.need("knob", m.knob)
      .need("target", m.target)
      .need("original", m.original)
      .opt("error", m.error);
}

CP_MESSAGE_FIELDS(RefusedJournal) {
  v.need("reason", m.reason).opt("knob", m.knob).opt("action", m.action).opt("detail", m.detail);
}

CP_MESSAGE_FIELDS(TuneStartReport) {
  v.opt("reverted", m.reverted)
      .opt("refused", m.refused)
      .opt("error", m.error)
      .opt("journal", m.journal);
}

CP_MESSAGE_FIELDS(Hello) {
  v.need("version", m.version)
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

CP_MESSAGE_FIELDS(AgentStats) { v.need("max_rss_kb", m.max_rss_kb); }

CP_MESSAGE_FIELDS(SmbStatusRequest) { v.omit_empty("conf", m.conf); }

CP_MESSAGE_FIELDS(SmbSessionStatus) {
  v.need("client", m.client)
      .need("dialect", m.dialect)
      .need("signing", m.signing)
      .opt("signing_degree", m.signing_degree)
      .need("encryption", m.encryption)
      .opt("encryption_degree", m.encryption_degree);
}

CP_MESSAGE_FIELDS(SmbStatusResult) { v.need("sessions", m.sessions); }

// ---- frames ----------------------------------------------------------------

CP_MESSAGE_FIELDS(Progress) { v.need("bytes", m.bytes).need("seconds", m.seconds); }

CP_MESSAGE_FIELDS(ErrorInfo) {
  v.need("kind", m.kind).need("message", m.message).opt("hint", m.hint);
}

// ---- tuning ----------------------------------------------------------------

CP_MESSAGE_FIELDS(TuneRequest) {
  v.need("knob", m.knob)
      .need("value", m.value)
      .opt("disk_dir", m.disk_dir)
      .opt("samba_conf", m.samba_conf)
      .opt("data_address", m.data_address)
      .opt("console", m.console)
      .opt("confirm_s", m.confirm_s)
      .opt("afp_conf", m.afp_conf)
      .opt("afp_restart", m.afp_restart);
}

CP_MESSAGE_FIELDS(TunePlanResult) {
  v.need("target", m.target)
      .need("original", m.original)
      .need("apply", m.apply)
      .need("revert", m.revert)
      .need("journal", m.journal)
      .opt("cuts_ssh", m.cuts_ssh)
      .omit_empty("watchdog_s", m.watchdog_s);
}

CP_MESSAGE_FIELDS(TuneConfirmResult) { v.need("confirmed", m.confirmed); }

CP_MESSAGE_FIELDS(TuneRevertResult) {
  v.need("reverted", m.reverted)
      .opt("reverted_at_start", m.reverted_at_start)
      .opt("refused", m.refused)
      .opt("at_start_error", m.at_start_error)
      .need("journal", m.journal);
}

// ---- protocol samples ------------------------------------------------------

CP_MESSAGE_FIELDS(ShareRef) {
  v.need("name", m.name)
      .need("url", m.url)
      .need("driver", m.driver)
      .opt("user", m.user)
      .omit_empty("password", m.password)
      .opt("options", m.options);
}

CP_MESSAGE_FIELDS(TransferRequest) {
  v.need("share", m.share)
      .need("op", m.op)
      .need("remote", m.remote)
      .need("dir", m.dir)
      .need("name", m.name)
      .opt("size", m.size)
      .opt("block", m.block)
      .opt("delete_after", m.delete_after);
}

CP_MESSAGE_FIELDS(TransferResult) {
  v.need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("checksum", m.checksum)
      .need("properties", m.properties)
      .need("cpu", m.cpu);
}

CP_MESSAGE_FIELDS(TransferDetails) {
  v.opt("file", m.file)
      .opt("share", m.share)
      .opt("checksum", m.checksum)
      .opt("server_fs", m.server_fs)
      .opt("server_disk", m.server_disk)
      .opt("cache_reason", m.cache_reason)
      .opt("properties", m.properties);
}

CP_MESSAGE_FIELDS(SizeScanRequest) {
  v.need("share", m.share)
      .need("remote", m.remote)
      .need("pattern", m.pattern)
      .need("request", m.request)
      .need("bytes", m.bytes)
      .need("file_size", m.file_size);
}

CP_MESSAGE_FIELDS(SizeScanResult) {
  v.need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("checksum", m.checksum)
      .need("cpu", m.cpu);
}

CP_MESSAGE_FIELDS(SizeScanDetails) {
  v.opt("share", m.share).opt("pattern", m.pattern).opt("request", m.request);
}

// ---- facts -----------------------------------------------------------------

CP_MESSAGE_FIELDS(FactsRequest) {
  v.opt("ram_dir", m.ram_dir)
      .opt("disk_dir", m.disk_dir)
      .opt("peer_address", m.peer_address)
      .omit_empty("samba_conf", m.samba_conf)
      .omit_default("samba", m.samba, true);
}

CP_MESSAGE_FIELDS(CpuStartRequest) { v.omit_empty("port", m.port).omit_empty("peer", m.peer); }

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
