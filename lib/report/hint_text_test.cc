#include "report/hint_text.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cp::report {
namespace {

using analysis::Hint;

// A hint of `id` carrying every figure and word any hint reads (hint_text
// reads only its own).
Hint full_hint(std::string_view id, double n) {
  Hint h{std::string(id), {}, {}};
  for (const char* k :
       {"server_mtu", "client_mtu", "rmem", "bdp", "path_bits", "rtt_ms", "sndbuf_limited",
        "disk_bps", "protocol_bps", "read_ahead_kb", "size", "default_size"}) {
    h.numbers[k] = n;
  }
  for (const char* k : {"receiver", "sender", "tcp_rmem", "rmem_max", "tcp_wmem", "wmem_max",
                        "protocol", "disk_device", "op", "key", "value", "parameter", "server",
                        "default", "cost", "evidence"}) {
    h.words[k] = std::string(k) + std::to_string(int(n));
  }
  return h;
}

TEST(HintText, EveryHintIdHasItsOwnWords) {
  std::set<std::string> texts;
  for (std::string_view id : analysis::kHintIds) {
    const std::string t = hint_text(full_hint(id, 1));
    EXPECT_FALSE(t.empty()) << id;
    texts.insert(t);
  }
  EXPECT_EQ(texts.size(), std::size(analysis::kHintIds));
}

// The hints that carry figures render them: other figures, other words.
TEST(HintText, HintsWithFiguresRenderThem) {
  for (std::string_view id : analysis::kHintIds) {
    if (id == "cpu.jumbo_frames" || id == "protocol.in_flight" || id == "protocol.client_drain") {
      EXPECT_EQ(hint_text(full_hint(id, 1)), hint_text(full_hint(id, 2))) << id;
    } else {
      EXPECT_NE(hint_text(full_hint(id, 1)), hint_text(full_hint(id, 2))) << id;
    }
  }
}

TEST(HintText, ASettingHintNamesItsKeyAndValue) {
  EXPECT_EQ(hint_setting(Hint{"server.request_limit",
                              {{"size", 65536}, {"default_size", 8 << 20}},
                              {{"key", "smb2 max read"}, {"value", "65536"}}}),
            "smb2 max read = 65536");
  EXPECT_EQ(
      hint_setting(Hint{"server.costly_setting",
                        {},
                        {{"parameter", "sync always"}, {"value", "Yes"}, {"server", "samba"}}}),
      "sync always = Yes");
}

}  // namespace
}  // namespace cp::report
