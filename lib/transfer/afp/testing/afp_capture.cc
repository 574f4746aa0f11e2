#include "transfer/afp/testing/afp_capture.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <deque>
#include <map>
#include <stdexcept>

#include "transfer/testing/pcap.h"

namespace cp::transfer::testing {

std::string afp_vectors_dir() {
#ifndef AFP_VECTORS_DIR
#error "AFP_VECTORS_DIR must point at ../shared/vectors/afp"
#endif
  const std::string dir = AFP_VECTORS_DIR;
  struct stat st {};
  if (::stat((dir + "/README.md").c_str(), &st) != 0) {
    throw std::runtime_error("AFP test vectors missing: " + dir +
                             "/README.md not found (the shared/ checkout must sit beside the "
                             "source tree)");
  }
  return dir;
}

uint8_t Exchange::afp_command() const {
  const uint8_t c = request.header.command;
  if ((c == dsi::kCommand || c == dsi::kWrite) && !request.payload.empty()) {
    return static_cast<uint8_t>(request.payload[0]);
  }
  return 0;
}

std::vector<CapturedConnection> load_afp_capture(const std::string& file) {
  std::vector<CapturedConnection> out;
  for (const auto& s : read_tcp_streams(afp_vectors_dir() + "/" + file, dsi::kDefaultPort)) {
    CapturedConnection c;
    const uint32_t max = 64u << 20;
    dsi::StreamDecoder client(max), server(max);
    client.feed(s.to_server);
    server.feed(s.to_client);
    while (auto m = client.next()) c.from_client.push_back(std::move(*m));
    while (auto m = server.next()) c.from_server.push_back(std::move(*m));
    if (client.buffered() || server.buffered()) {
      throw std::runtime_error(
          fmt::format("{}: {} stream ends inside a DSI message", file, s.client));
    }
    std::map<uint16_t, std::deque<const dsi::Message*>> replies;
    for (const auto& m : c.from_server) {
      if (m.header.is_reply()) {
        replies[m.header.request_id].push_back(&m);
      } else {
        c.server_requests.push_back(m);
      }
    }
    for (const auto& m : c.from_client) {
      Exchange e{m, std::nullopt};
      if (!m.header.is_reply() && m.header.command != dsi::kTickle &&
          m.header.command != dsi::kCloseSession) {
        auto& q = replies[m.header.request_id];
        if (!q.empty()) {
          e.reply = *q.front();
          q.pop_front();
        }
      }
      c.exchanges.push_back(std::move(e));
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<std::string>& afp_capture_names() {
  static const std::vector<std::string> names = {
      "afp_guest_tmpvol.pcap", "afp_clrtxt_afpuser_diskvol.pcap", "afp_dhx_afpuser_tmpvol.pcap",
      "afp_dhx2_afpuser_diskvol.pcap", "afp_speedtest_clrtxt_tmpvol_read1MB.pcap"};
  return names;
}

std::string hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace cp::transfer::testing
