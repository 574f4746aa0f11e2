#include "probe/tcp_info.h"

#include "probe/platform.h"

#include <gtest/gtest.h>

#include <vector>

namespace cp::probe {
namespace {

TEST(TcpInfo, OnlyFieldsTheKernelFilledAreUsed) {
  std::vector<unsigned char> raw(tcp_info_struct_size(), 0xFF);
  TcpInfoSummary full = summarize_tcp_info(raw.data(), raw.size());
  EXPECT_TRUE(full.available);
  EXPECT_EQ(full.rtt_us, 0xFFFFFFFFu);
  EXPECT_GT(full.busy_s, 0);
  EXPECT_GT(full.sndbuf_limited_s, 0);
  // A pre-4.9 kernel stops before tcpi_busy_time.
  TcpInfoSummary old = summarize_tcp_info(raw.data(), tcp_info_busy_time_offset());
  EXPECT_EQ(old.rtt_us, 0xFFFFFFFFu);
  EXPECT_EQ(old.busy_s, 0);
  EXPECT_EQ(old.rwnd_limited_s, 0);
  EXPECT_EQ(old.sndbuf_limited_s, 0);
  // qemu-user's answer: 4 bytes, as for an int option.
  TcpInfoSummary none = summarize_tcp_info(raw.data(), 4);
  EXPECT_FALSE(none.available);
  EXPECT_EQ(none.rtt_us, 0u);
  EXPECT_EQ(none.snd_mss, 0u);
}

TEST(TcpInfo, NotASocket) { EXPECT_FALSE(os::read_tcp_info(-1).available); }

}  // namespace
}  // namespace cp::probe
