#include "transfer/testing/pcap.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "transfer/afp/testing/afp_capture.h"

namespace cp::transfer::testing {
namespace {

// A little-endian pcap with Ethernet/IPv4/TCP records.
class PcapBuilder {
 public:
  PcapBuilder() {
    put32(0xa1b2c3d4);
    put16(2);
    put16(4);
    put32(0);
    put32(0);
    put32(65535);
    put32(1);  // Ethernet
  }
  // A segment from client port `cport` (to_server) or to it.
  void segment(uint16_t cport, bool to_server, uint32_t seq, uint8_t flags,
               std::string_view payload) {
    std::string ip;
    auto b16 = [&](uint16_t v) {
      ip += static_cast<char>(v >> 8);
      ip += static_cast<char>(v);
    };
    auto b32 = [&](uint32_t v) {
      b16(static_cast<uint16_t>(v >> 16));
      b16(static_cast<uint16_t>(v));
    };
    ip += "\x45";
    ip += '\0';
    b16(static_cast<uint16_t>(20 + 20 + payload.size()));
    b32(0);
    ip += "\x40\x06";
    b16(0);
    b32(0x7f000001);
    b32(0x7f000001);
    b16(to_server ? cport : 548);
    b16(to_server ? 548 : cport);
    b32(seq);
    b32(0);
    ip += static_cast<char>(5 << 4);
    ip += static_cast<char>(flags);
    b16(65535);
    b32(0);
    ip += payload;
    const std::string eth = std::string(12, '\0') + std::string("\x08\x00", 2) + ip;
    put32(0);
    put32(0);
    put32(static_cast<uint32_t>(eth.size()));
    put32(static_cast<uint32_t>(eth.size()));
    out_ += eth;
  }
  const std::string& bytes() const { return out_; }

 private:
  void put16(uint16_t v) {
    out_ += static_cast<char>(v);
    out_ += static_cast<char>(v >> 8);
  }
  void put32(uint32_t v) {
    put16(static_cast<uint16_t>(v));
    put16(static_cast<uint16_t>(v >> 16));
  }
  std::string out_;
};

constexpr uint8_t kSyn = 0x02, kAck = 0x10, kPsh = 0x08;

TEST(Pcap, ReassemblesOutOfOrderAndRetransmittedSegments) {
  PcapBuilder b;
  b.segment(40000, true, 1000, kSyn, "");
  b.segment(40000, false, 5000, kSyn | kAck, "");
  b.segment(40000, true, 1006, kAck | kPsh, "world");  // arrives first
  b.segment(40000, true, 1001, kAck | kPsh, "hello");
  b.segment(40000, true, 1001, kAck | kPsh, "hello");  // retransmitted
  b.segment(40000, false, 5001, kAck | kPsh, "reply");
  b.segment(40001, true, 7, kSyn, "");  // a second connection
  b.segment(40001, true, 8, kAck, "x");
  const auto streams = parse_tcp_streams(b.bytes(), 548);
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(streams[0].client, "127.0.0.1:40000");
  EXPECT_EQ(streams[0].to_server, "helloworld");
  EXPECT_EQ(streams[0].to_client, "reply");
  EXPECT_EQ(streams[1].to_server, "x");
  EXPECT_EQ(streams[1].to_client, "");
}

TEST(Pcap, GapsAndBadFilesAreErrors) {
  PcapBuilder b;
  b.segment(40000, true, 1000, kSyn, "");
  b.segment(40000, true, 1005, kAck, "late");
  EXPECT_THROW(parse_tcp_streams(b.bytes(), 548), std::runtime_error);
  EXPECT_THROW(parse_tcp_streams("not a pcap at all, not at all", 548), std::runtime_error);
  EXPECT_THROW(parse_tcp_streams(b.bytes().substr(0, b.bytes().size() - 3), 548),
               std::runtime_error);
}

TEST(Pcap, ReadsTheGuestCapture) {
  const auto streams = read_tcp_streams(afp_vectors_dir() + "/afp_guest_tmpvol.pcap", 548);
  ASSERT_EQ(streams.size(), 2u);  // DSIGetStatus, then the session
  EXPECT_EQ(streams[0].to_server.size(), 16u);
  EXPECT_EQ(streams[0].to_client.size(), 437u);
  EXPECT_EQ(streams[1].to_server.size(), 66578u);
  EXPECT_EQ(streams[1].to_client.size(), 103431u);
}

}  // namespace
}  // namespace cp::transfer::testing
