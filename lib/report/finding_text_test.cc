// The sentences of the verdict are rendered from structured findings: every
// rule of the table has one, and the JSON's text is that sentence.
#include "report/finding_text.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/units.h"
#include "report/hint_text.h"
#include "report/report.h"
#include "report/row_text.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

// A finding of `rule` with the structure its rule always fills.
analysis::Finding finding_of(std::string_view rule) {
  analysis::Finding f;
  f.rule = std::string(rule);
  f.path = "smb ram read";
  f.layer = "smb";
  f.subject.key = "smb:ram:read:100000000";
  f.beneath.key = "tcp:server->client:send";
  f.context.push_back(f.beneath);
  // The trust checks' reasons (rows' cache, medium and anomaly reasons).
  analysis::TrustReason medium;
  medium.id = "medium.disk_on_ram";
  medium.role = "server";
  medium.fs = "tmpfs";
  f.reasons = {medium};
  if (rule == "path.tcp" || rule == "protocol.at_tcp_ceiling" ||
      rule == "protocol.at_ram_ceiling") {
    f.because.push_back(
        finding_of(rule == "protocol.at_ram_ceiling" ? "protocol.layer" : "tcp.at_link"));
  }
  return f;
}

TEST(FindingText, EveryRuleOfTheTableHasItsSentence) {
  for (const analysis::RuleInfo& r : analysis::verdict_rules()) {
    const std::string t = finding_text(finding_of(r.id));
    EXPECT_GT(t.size(), 10u) << r.id;
    EXPECT_EQ(t.back(), '.') << r.id;
  }
}

TEST(FindingText, HintsAreRenderedInTheTextOnlyAndTheSentenceOmitsThem) {
  analysis::Finding f = finding_of("protocol.layer");
  const std::string bare = finding_text(f);
  f.hints = {analysis::Hint{"protocol.in_flight", {}, {}}};
  EXPECT_EQ(finding_text(f), bare.substr(0, bare.size() - 1) + "; " + hint_text(f.hints[0]) + ".");
  EXPECT_EQ(finding_sentence(f), bare);
}

// JSON, text and the headline carry one rendering of each finding, with its rule id.
TEST(FindingText, JsonTextAndRuleIdAreThoseOfTheFinding) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  const auto doc = boost::json::parse(run_json(stored::decode(run), a)).as_object();
  const auto& findings = doc.at("verdict").at("findings").as_array();
  ASSERT_EQ(findings.size(), a.findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    const auto& j = findings[i].as_object();
    EXPECT_EQ(j.at("rule").as_string(), a.findings[i].rule);
    EXPECT_EQ(j.at("text").as_string(), finding_text(a.findings[i]));
    EXPECT_EQ(j.at("confidence").as_string(), confidence_name(a.findings[i].confidence));
  }
  EXPECT_EQ(doc.at("verdict").at("headline").as_string(), headline_text(a));
}

// files.round_trips says what bounds it: the serial round trips taking turns,
// or the operations in flight, each with its own remedy.
TEST(FindingText, RoundTripBoundSaysWhatTakesTurnsOrWhatIsInFlight) {
  analysis::Finding f = finding_of("files.round_trips");
  f.reasons.clear();
  static_cast<analysis::RowIdentity&>(f.subject) = {"files", "disk", "smb", "create", 4096};
  f.ratio = 0.9;
  f.numbers = {{"ops_per_s", 300}, {"round_trips", 4},        {"rtt_ms", 1.5},
               {"in_flight", 2},   {"serial_round_trips", 2}, {"ceiling_ops_per_s", 333}};
  const std::string does = row_label(f.subject) + " does 300 creates/s";
  f.words["bound"] = "turns";
  EXPECT_EQ(finding_sentence(f),
            does +
                ", 90 % of what the round trips allow: each create costs at least 4 round trips "
                "of 1.50 ms, 2 of which take turns on the connection whatever is in flight, so "
                "333/s at most; more connections (each its own turn) or a shorter path would "
                "lift it.");
  f.words["bound"] = "in_flight";
  EXPECT_EQ(finding_sentence(f),
            does +
                ", 90 % of what the round trips allow: each create costs at least 4 round trips "
                "of 1.50 ms, so 333/s at most with 2.0 in flight; more operations in flight (the "
                "share's connections or depth, a copy tool with parallel workers) or a shorter "
                "path would lift it.");
}

// A protocol from disk names the rows it cites as its rule does (CitedName)
// and says what each does there: the protocol from RAM moves, the server
// disk writes (synchronously, where a costly setting cites its flushes).
TEST(FindingText, CitedRowsSayTheirNameAndWhatTheyDo) {
  using analysis::CitedName;
  auto cited = [](analysis::RowIdentity id, CitedName named, double median) {
    analysis::Cited c;
    static_cast<analysis::RowIdentity&>(c) = std::move(id);
    c.key = c.layer + ":" + c.where + ":" + c.op;
    c.named = named;
    c.median = median;
    c.n = 5;
    return c;
  };
  analysis::Finding f;
  f.rule = "protocol.disk_ceiling";
  f.path = "smb disk write";
  f.layer = "server disk";
  f.ratio = 0.95;
  f.subject = cited({"smb", "disk", "", "write", 100'000'000}, CitedName::kMediumOp, 50e6);
  f.beneath = cited({"disk", "server", "", "write", 100'000'000}, CitedName::kTheLayer, 52.6e6);
  f.context = {cited({"smb", "ram", "", "write", 100'000'000}, CitedName::kMedium, 100e6),
               f.beneath,
               cited({"disk", "server", "", "syncwrite", 100'000'000}, CitedName::kTheLayer, 20e6)};
  EXPECT_EQ(finding_sentence(f),
            "smb disk write: SMB from disk write moves " + format_mbps(50e6) + " = " +
                format_percent(0.95) +
                " of the server disk: the server disk caps it (SMB from RAM "
                "moves " +
                format_mbps(100e6) + ", the server disk writes " + format_mbps(52.6e6) +
                ", the server disk writes synchronously " + format_mbps(20e6) + ").");
}

// A share not over its medium says why and the fix, from the reason's fields.
TEST(FindingText, MediumFindingSaysTheReasonAndItsFix) {
  analysis::Finding f = finding_of("trust.medium");
  analysis::TrustReason& t = f.reasons.at(0);
  t.id = "medium.other_disk";
  static_cast<analysis::RowIdentity&>(t.row) = {"nfs", "disk", "", "read", 100'000'000};
  t.share_disk = "sdb";
  t.stage_disk = "sda";
  EXPECT_EQ(finding_sentence(f),
            "the NFS share measured as disk is on sdb on the server, but the server disk stage "
            "measured sda (disk_dir): set [server] disk_dir to a directory on the share's disk.");
  const std::map<std::string, std::string> words = finding_words(f);
  EXPECT_EQ(words.at("fix"), medium_fix_text(t));
  EXPECT_EQ(words.at("reason"), trust_reason_text(t));
}

}  // namespace
}  // namespace cp::report
