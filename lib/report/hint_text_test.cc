#include "report/hint_text.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "analysis/costly_settings.h"

namespace cp::report {
namespace {

using analysis::Hint;

// A hint of `id` carrying every figure and word any hint reads (hint_text
// reads only its own).
Hint full_hint(std::string_view id, double n) {
  Hint h{std::string(id), {}, {}};
  for (const char* k : {"server_mtu", "client_mtu", "rmem", "bdp", "path_bits", "rtt_ms",
                        "sndbuf_limited", "disk_bps", "protocol_bps", "read_ahead_kb", "size",
                        "default_size", "evidence.rate", "evidence.cap"}) {
    h.numbers[k] = n;
  }
  for (const char* k : {"receiver", "sender", "tcp_rmem", "rmem_max", "tcp_wmem", "wmem_max",
                        "protocol", "disk_device", "op", "key", "value", "parameter", "server",
                        "default", "cost", "evidence.proto"}) {
    h.words[k] = std::string(k) + std::to_string(int(n));
  }
  h.words["evidence"] = "setting.rate_cap";  // a costly setting's evidence: its id
  h.words["cost"] = "session_rate";          // and its cost's
  return h;
}

// A setting's evidence of `id` carrying every figure and word any evidence
// reads.
Hint full_evidence(std::string_view id, double n) {
  Hint e{std::string(id), {}, {}};
  for (const char* k : {"rate", "sync_rate", "block", "ram_rate", "plain_rate", "request",
                        "default", "buffer", "rtt_ms", "window_rate", "tcp_rate", "cap"}) {
    e.numbers[k] = n * 1e6;
  }
  for (const char* k : {"proto", "mode", "process", "kind", "value"}) {
    e.words[k] = std::string(k) + std::to_string(int(n));
  }
  return e;
}

// Every cost the costly-settings table names has its words, each its own.
TEST(SettingCostText, EveryCostOfTheTableHasItsOwnWords) {
  std::map<std::string, std::string> texts;  // id -> words
  for (const analysis::CostlySetting& s : analysis::costly_settings()) {
    const std::string t = setting_cost_text(s.cost);
    EXPECT_FALSE(t.empty()) << s.parameter;
    texts[s.cost] = t;
  }
  std::set<std::string> distinct;
  for (const auto& [id, t] : texts) distinct.insert(t);
  EXPECT_EQ(distinct.size(), texts.size());
  EXPECT_GE(texts.size(), 10u);  // the table's costs are many, not one default
}

TEST(SettingEvidenceText, EveryEvidenceIdHasItsOwnWordsAndRendersItsFigures) {
  std::set<std::string> texts;
  for (std::string_view id : analysis::kSettingEvidenceIds) {
    const std::string t = setting_evidence_text(full_evidence(id, 1));
    EXPECT_FALSE(t.empty()) << id;
    EXPECT_NE(t, setting_evidence_text(full_evidence(id, 2))) << id;
    texts.insert(t);
  }
  EXPECT_EQ(texts.size(), std::size(analysis::kSettingEvidenceIds));
}

// Writes near the synchronous rate and writes below the plain rate are told
// apart, and a client's own flushes are said.
TEST(SettingEvidenceText, SyncWritesSayNearOrBelowAndWhoFlushes) {
  Hint near = full_evidence("setting.sync_writes", 1);
  near.words["near"] = "near";
  Hint below = near;
  below.words["near"] = "below";
  Hint client = near;
  client.words["client_flushes"] = "yes";
  const std::set<std::string> texts{setting_evidence_text(near), setting_evidence_text(below),
                                    setting_evidence_text(client)};
  EXPECT_EQ(texts.size(), 3u);
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
