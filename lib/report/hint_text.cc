#include "report/hint_text.h"

#include <fmt/format.h>

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

}  // namespace

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
    return fmt::format("`{} = {}` on the {} server (default {}): {}; {}", word(h, "parameter"),
                       word(h, "value"), word(h, "server"), word(h, "default"), word(h, "cost"),
                       word(h, "evidence"));
  }
  CP_CHECK(!"a hint id hint_text does not know (analysis/ladder.h lists them)");
  return h.id;
}

}  // namespace cp::report
