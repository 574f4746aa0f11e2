// The sentences of the verdict are rendered from structured findings: every
// rule of the table has one, and the JSON's text is that sentence.
#include "report/finding_text.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "report/hint_text.h"
#include "report/report.h"
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
  f.words["reason"] = "the server's disk_dir is on tmpfs";
  f.words["fix"] = "set [server] disk_dir to a directory on the disk under test";
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
    EXPECT_EQ(j.at("confidence").as_string(), analysis::confidence_name(a.findings[i].confidence));
  }
  EXPECT_EQ(doc.at("verdict").at("headline").as_string(), headline_text(a));
}

}  // namespace
}  // namespace cp::report
