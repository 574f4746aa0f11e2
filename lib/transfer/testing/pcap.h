// Test-only: reads a pcap file (Ethernet, Linux cooked or raw IP link
// types; IPv4 and IPv6) and reassembles its TCP connections to one server
// port into the two byte streams of each, in the order they were opened.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cp::transfer::testing {

struct TcpStream {
  std::string client;     // "127.0.0.1:49532"
  std::string to_server;  // bytes the client sent
  std::string to_client;  // bytes the server sent
};

// Throws std::runtime_error naming the problem (not a pcap, truncated
// record, unsupported link type, a gap in a stream).
std::vector<TcpStream> parse_tcp_streams(std::string_view pcap, uint16_t server_port);
std::vector<TcpStream> read_tcp_streams(const std::string& path, uint16_t server_port);

// The whole file; throws std::runtime_error naming it when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace cp::transfer::testing
