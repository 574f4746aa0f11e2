#include "report/hint_text.h"

#include <fmt/format.h>

#include <map>

#include "analysis/costly_settings.h"
#include "core/error.h"
#include "core/units.h"

namespace cp::report {

namespace {

double number(const analysis::Hint& h, const std::string& key) {
  auto it = h.numbers.find(key);
  CP_CHECK(it != h.numbers.end());  // each hint id has its numbers (analysis/ladder.h)
  return it->second;
}

std::string word(const analysis::Hint& h, const std::string& key) {
  auto it = h.words.find(key);
  return it == h.words.end() ? std::string() : it->second;
}

// " (now net.ipv4.tcp_rmem = "4096 131072 4194304", net.core.rmem_max = 212992)";
// "" when the host's sysctls are unknown.
std::string sysctls_now(const analysis::Hint& h, const char* mem, const char* max) {
  const std::string v = word(h, mem);
  if (v.empty()) return "";
  return fmt::format(" (now net.ipv4.{} = \"{}\", net.core.{} = {})", mem, v, max, word(h, max));
}

std::string receive_buffer(const analysis::Hint& h) {
  const std::string receiver = word(h, "receiver");
  const std::string why =
      h.numbers.count("rwnd_limited")
          ? fmt::format("receive-window-limited {}", format_percent(number(h, "rwnd_limited")))
          : fmt::format(
                "the {}'s tcp_rmem max {} bytes is below the bandwidth-delay product {} bytes "
                "({} x {:.2f} ms RTT)",
                receiver, static_cast<uint64_t>(number(h, "rmem")),
                static_cast<uint64_t>(number(h, "bdp")), format_rate_bits(number(h, "path_bits")),
                number(h, "rtt_ms"));
  return fmt::format("{}: raise the {}'s receive buffer max{}", why, receiver,
                     sysctls_now(h, "tcp_rmem", "rmem_max"));
}

std::string readahead(const analysis::Hint& h) {
  const std::string device = word(h, "disk_device");
  const std::string dev = device.empty() ? "DEV" : "/dev/" + device;
  // blockdev counts 512-byte sectors: 4096 = 2 MiB.
  return fmt::format(
      "the server disk reads {} on its own but {} from disk reads {}: raise its readahead "
      "(now {} KiB on {}) with `blockdev --setra 4096 {}` (2 MiB) or `hdparm -a 4096 {}`",
      format_mbps(number(h, "disk_bps")), word(h, "protocol"),
      format_mbps(number(h, "protocol_bps")), static_cast<int64_t>(number(h, "read_ahead_kb")),
      device.empty() ? "its disk" : device, dev, dev);
}

std::string size_of(const analysis::Hint& h, const std::string& key) {
  return format_size(static_cast<uint64_t>(number(h, key)));
}

// A disk share's writes held by flushes (setting.sync_writes).
std::string sync_writes(const analysis::Hint& e) {
  const std::string proto = word(e, "proto");
  const std::string from_ram =
      e.numbers.count("ram_rate")
          ? fmt::format(" ({} from RAM: {}{})", proto, format_mbps(number(e, "ram_rate")),
                        word(e, "ram_cpu") == "yes" ? ", CPU-bound" : "")
          : "";
  std::string s;
  if (word(e, "near") == "near") {
    s = fmt::format(
        "{} from disk writes {}{}, within {:.0f} % of the server disk's synchronous write rate "
        "({}, a flush per {} block)",
        proto, format_mbps(number(e, "rate")), from_ram, (analysis::kNearSyncRate - 1) * 100,
        format_mbps(number(e, "sync_rate")), size_of(e, "block"));
  } else {
    s = fmt::format(
        "{} from disk writes {}{}, below the server disk's plain write rate{} where a flush "
        "per {} block writes {}",
        proto, format_mbps(number(e, "rate")), from_ram,
        e.numbers.count("plain_rate") ? fmt::format(" ({})", format_mbps(number(e, "plain_rate")))
                                      : std::string(),
        size_of(e, "block"), format_mbps(number(e, "sync_rate")));
  }
  if (word(e, "client_flushes") == "yes") s += ", with `sync always` off: the client flushes";
  return s;
}

}  // namespace

std::string setting_evidence_text(const analysis::Hint& e) {
  const std::string& id = e.id;
  if (id == "setting.request_size") {
    return fmt::format("{} per request, below the default {}", size_of(e, "request"),
                       size_of(e, "default"));
  }
  if (id == "setting.sync_writes") return sync_writes(e);
  if (id == "setting.sync_unmeasured") {
    return fmt::format(
        "{} from disk writes {}, below both the server disk and {} from RAM (the disk's "
        "synchronous write rate was not measured)",
        word(e, "proto"), format_mbps(number(e, "rate")), word(e, "proto"));
  }
  if (id == "setting.cpu_encrypted") {
    return fmt::format("CPU-bound with the session encrypted ({})", word(e, "mode"));
  }
  if (id == "setting.cpu_signed") {
    return fmt::format("CPU-bound with the session signed ({})", word(e, "mode"));
  }
  if (id == "setting.cpu_server_read") {
    return fmt::format("the server's {} at a CPU limit ({}) while serving reads",
                       word(e, "process"), word(e, "kind"));
  }
  if (id == "setting.disk_below") {
    return fmt::format("{} from disk below both the server disk and {} from RAM", word(e, "proto"),
                       word(e, "proto"));
  }
  if (id == "setting.window") {
    return fmt::format("{} over the {:.2f} ms round trip allows {}, below TCP's {}; {} moves {}",
                       size_of(e, "buffer"), number(e, "rtt_ms"),
                       format_mbps(number(e, "window_rate")), format_mbps(number(e, "tcp_rate")),
                       word(e, "proto"), format_mbps(number(e, "rate")));
  }
  if (id == "setting.cpu_tls") {
    return fmt::format("CPU-bound with TLS on the data connection ({})", word(e, "value"));
  }
  if (id == "setting.rate_cap") {
    return fmt::format("{} moves {}, at the {} per session the setting allows", word(e, "proto"),
                       format_mbps(number(e, "rate")), format_mbps(number(e, "cap")));
  }
  CP_CHECK(!"a setting evidence id setting_evidence_text does not know (analysis/ladder.h)");
  return id;
}

std::string setting_cost_text(const std::string& id) {
  static const std::map<std::string, const char*, std::less<>> kCosts = {
      {"flush_every_write",
       "a flush (fsync) after every write: writes at the disk's synchronous rate"},
      {"flush_when_asked", "a flush whenever the client asks for one (macOS clients flush often)"},
      {"cpu_per_byte", "CPU per byte on both ends"},
      {"requests_per_byte", "more requests, and round trips, per byte"},
      {"sync_reads", "each read served synchronously: the disk's latency is not overlapped"},
      {"sync_writes", "each write served synchronously: the disk's latency is not overlapped"},
      {"copy_smbd",
       "a copy through smbd per byte read (sendfile skips it when neither signing nor encryption "
       "is on)"},
      {"copy_vsftpd", "a copy through vsftpd per byte read"},
      {"copy_proftpd", "a copy through proftpd per byte read"},
      {"fixed_socket_buffer", "a fixed socket buffer caps the TCP window at buffer / round trip"},
      {"session_rate", "each session held to that many bytes per second"},
      {"download_rate_kib", "each session's downloads held to that many KiB per second"},
      {"upload_rate_kib", "each session's uploads held to that many KiB per second"}};
  auto it = kCosts.find(id);
  CP_CHECK(it != kCosts.end() && "a setting cost id setting_cost_text does not know");
  return it->second;
}

std::string hint_setting(const analysis::Hint& h) {
  if (h.id == "server.request_limit") return word(h, "key") + " = " + word(h, "value");
  if (h.id == "server.costly_setting") return word(h, "parameter") + " = " + word(h, "value");
  return hint_text(h);
}

std::string hint_text(const analysis::Hint& h) {
  if (h.id == "mtu.mismatch") {
    return fmt::format(
        "MTU {} on the server but {} on the client: set the same MTU on both ends and every "
        "switch between them",
        static_cast<int>(number(h, "server_mtu")), static_cast<int>(number(h, "client_mtu")));
  }
  if (h.id == "tcp.receive_buffer") return receive_buffer(h);
  if (h.id == "tcp.send_buffer") {
    return fmt::format("send-buffer-limited {}: raise the {}'s send buffer max{}",
                       format_percent(number(h, "sndbuf_limited")), word(h, "sender"),
                       sysctls_now(h, "tcp_wmem", "wmem_max"));
  }
  if (h.id == "cpu.jumbo_frames") {
    return "kernel work is most of the busy CPU at MTU 1500 on both ends: jumbo frames (MTU 9000 "
           "on both ends and every switch between) cut the per-packet cost";
  }
  if (h.id == "protocol.in_flight") {
    return "keep more requests in flight: larger calls (`options = io_size=8MiB`) or more "
           "connections (`connections=2`)";
  }
  if (h.id == "protocol.client_drain") {
    return "give the share larger calls (`options = io_size=32MiB`) or more connections "
           "(`connections=2`) to keep the path full";
  }
  if (h.id == "disk.readahead") return readahead(h);
  if (h.id == "protocol.negotiated_size") {
    return fmt::format(
        "the {} session moves at most {} per {} request (negotiated): the server limits it",
        word(h, "protocol"), format_size(static_cast<uint64_t>(number(h, "size"))), word(h, "op"));
  }
  if (h.id == "server.request_limit") {
    return fmt::format(
        "`{} = {}` in the server's Samba config ({} per request; Samba's default is {}): remove "
        "it or raise it",
        word(h, "key"), word(h, "value"), format_size(static_cast<uint64_t>(number(h, "size"))),
        format_size(static_cast<uint64_t>(number(h, "default_size"))));
  }
  if (h.id == "server.costly_setting") {
    // The evidence travels in the hint as "evidence.*" entries.
    analysis::Hint e{word(h, "evidence"), {}, {}};
    for (const auto& [k, v] : h.numbers)
      if (k.starts_with("evidence.")) e.numbers[k.substr(9)] = v;
    for (const auto& [k, v] : h.words)
      if (k.starts_with("evidence.")) e.words[k.substr(9)] = v;
    return fmt::format("`{} = {}` on the {} server (default {}): {}; {}", word(h, "parameter"),
                       word(h, "value"), word(h, "server"), word(h, "default"),
                       setting_cost_text(word(h, "cost")), setting_evidence_text(e));
  }
  CP_CHECK(!"a hint id hint_text does not know (analysis/ladder.h lists them)");
  return h.id;
}

}  // namespace cp::report
