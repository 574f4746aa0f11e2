#include "transfer/testing/pcap.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace cp::transfer::testing {
namespace {

uint16_t be16(std::string_view b, size_t at) {
  return static_cast<uint16_t>((uint8_t(b[at]) << 8) | uint8_t(b[at + 1]));
}
uint32_t be32(std::string_view b, size_t at) {
  return (uint32_t(be16(b, at)) << 16) | be16(b, at + 2);
}

// One direction of a connection: segments by sequence number, relative to
// the first byte (SYN + 1, or the first segment seen).
struct Half {
  bool have_base = false;
  uint32_t base = 0;
  std::map<uint32_t, std::string> segments;  // relative seq -> payload

  void add(uint32_t seq, bool syn, std::string_view payload) {
    if (syn) {
      base = seq + 1;
      have_base = true;
      return;
    }
    if (!have_base) {
      base = seq;
      have_base = true;
    }
    if (payload.empty()) return;
    std::string& slot = segments[seq - base];
    if (payload.size() > slot.size()) slot = std::string(payload);  // keep the longest copy
  }

  std::string bytes(const std::string& what) const {
    std::string out;
    for (const auto& [rel, data] : segments) {
      if (rel > out.size()) {
        throw std::runtime_error(fmt::format("{}: {} bytes missing at stream offset {}", what,
                                             rel - out.size(), out.size()));
      }
      if (rel + data.size() > out.size()) out += data.substr(out.size() - rel);
    }
    return out;
  }
};

struct Conn {
  std::string client;
  Half c2s, s2c;
};

}  // namespace

std::vector<TcpStream> parse_tcp_streams(std::string_view pcap, uint16_t server_port) {
  if (pcap.size() < 24) throw std::runtime_error("pcap: shorter than its 24-byte header");
  const uint32_t magic_le = uint8_t(pcap[0]) | uint8_t(pcap[1]) << 8 | uint8_t(pcap[2]) << 16 |
                            uint32_t(uint8_t(pcap[3])) << 24;
  bool little;
  if (magic_le == 0xa1b2c3d4 || magic_le == 0xa1b23c4d) {
    little = true;
  } else if (magic_le == 0xd4c3b2a1 || magic_le == 0x4d3cb2a1) {
    little = false;
  } else {
    throw std::runtime_error(
        fmt::format("pcap: bad magic 0x{:08x} (pcapng is not read)", magic_le));
  }
  auto u32 = [&](size_t at) {
    return little ? uint32_t(uint8_t(pcap[at]) | uint8_t(pcap[at + 1]) << 8 |
                             uint8_t(pcap[at + 2]) << 16 | uint32_t(uint8_t(pcap[at + 3])) << 24)
                  : be32(pcap, at);
  };
  const uint32_t linktype = u32(20);
  std::vector<Conn> conns;
  std::map<std::string, size_t> open;  // client "ip:port" -> index of its latest connection
  size_t off = 24;
  for (size_t n = 1; off < pcap.size(); ++n) {
    if (off + 16 > pcap.size()) throw std::runtime_error(fmt::format("pcap: record {} cut", n));
    const uint32_t incl = u32(off + 8);
    off += 16;
    if (off + incl > pcap.size()) {
      throw std::runtime_error(
          fmt::format("pcap: record {} claims {} bytes past the end", n, incl));
    }
    std::string_view pkt = pcap.substr(off, incl);
    off += incl;
    size_t l3 = 0;
    uint16_t ethertype = 0;
    switch (linktype) {
      case 1:  // Ethernet, maybe one VLAN tag
        if (pkt.size() < 14) continue;
        ethertype = be16(pkt, 12);
        l3 = 14;
        if (ethertype == 0x8100 && pkt.size() >= 18) {
          ethertype = be16(pkt, 16);
          l3 = 18;
        }
        break;
      case 113:  // Linux cooked (SLL)
        if (pkt.size() < 16) continue;
        ethertype = be16(pkt, 14);
        l3 = 16;
        break;
      case 101:  // raw IP
        if (pkt.empty()) continue;
        ethertype = (uint8_t(pkt[0]) >> 4) == 6 ? 0x86dd : 0x0800;
        break;
      default:
        throw std::runtime_error(fmt::format("pcap: link type {} is not read", linktype));
    }
    std::string_view ip = pkt.substr(l3);
    std::string src, dst;
    std::string_view tcp;
    if (ethertype == 0x0800) {
      if (ip.size() < 20 || ip[9] != 6) continue;
      const size_t ihl = (uint8_t(ip[0]) & 0xf) * 4;
      const size_t total = be16(ip, 2);
      if (total < ihl || total > ip.size()) continue;
      src = fmt::format("{}.{}.{}.{}", uint8_t(ip[12]), uint8_t(ip[13]), uint8_t(ip[14]),
                        uint8_t(ip[15]));
      dst = fmt::format("{}.{}.{}.{}", uint8_t(ip[16]), uint8_t(ip[17]), uint8_t(ip[18]),
                        uint8_t(ip[19]));
      tcp = ip.substr(ihl, total - ihl);
    } else if (ethertype == 0x86dd) {
      if (ip.size() < 40 || ip[6] != 6) continue;  // no extension headers
      const size_t plen = be16(ip, 4);
      if (40 + plen > ip.size()) continue;
      auto addr = [&](size_t at) {
        std::string s = "[";
        for (int i = 0; i < 16; i += 2) s += fmt::format("{}{:x}", i ? ":" : "", be16(ip, at + i));
        return s + "]";
      };
      src = addr(8);
      dst = addr(24);
      tcp = ip.substr(40, plen);
    } else {
      continue;
    }
    if (tcp.size() < 20) continue;
    const uint16_t sport = be16(tcp, 0), dport = be16(tcp, 2);
    const uint32_t seq = be32(tcp, 4);
    const size_t doff = (uint8_t(tcp[12]) >> 4) * 4;
    const uint8_t flags = uint8_t(tcp[13]);
    const bool syn = flags & 0x02, ack = flags & 0x10;
    if (doff < 20 || doff > tcp.size()) continue;
    const std::string_view payload = tcp.substr(doff);
    bool to_server;
    std::string client;
    if (dport == server_port) {
      to_server = true;
      client = fmt::format("{}:{}", src, sport);
    } else if (sport == server_port) {
      to_server = false;
      client = fmt::format("{}:{}", dst, dport);
    } else {
      continue;
    }
    auto it = open.find(client);
    // A client's SYN after data on the same address starts a new connection.
    const bool new_conn =
        it == open.end() || (to_server && syn && !ack && !conns[it->second].c2s.segments.empty());
    if (new_conn) {
      conns.push_back({client, {}, {}});
      open[client] = conns.size() - 1;
    }
    Conn& c = conns[open[client]];
    (to_server ? c.c2s : c.s2c).add(seq, syn, payload);
  }
  std::vector<TcpStream> out;
  for (const auto& c : conns) {
    out.push_back({c.client, c.c2s.bytes("pcap: stream from " + c.client),
                   c.s2c.bytes("pcap: stream to " + c.client)});
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<TcpStream> read_tcp_streams(const std::string& path, uint16_t server_port) {
  try {
    return parse_tcp_streams(read_file(path), server_port);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace cp::transfer::testing
