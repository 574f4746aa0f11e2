// The rule table held to docs/verdict-rules.md: every rule id is listed there
// once, in the table's order, and the doc lists no rule the table lacks.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "analysis/costly_settings.h"
#include "analysis/ladder.h"
#include "core/text.h"
#include "transfer/driver.h"

namespace cp::analysis {
namespace {

// The ids of docs/verdict-rules.md's rule table: "| `protocol.layer` | ... |" rows.
std::vector<std::string> documented_ids() {
  const std::optional<std::string> doc =
      read_file(std::string(CP_SOURCE_DIR) + "/docs/verdict-rules.md");
  EXPECT_TRUE(doc.has_value()) << "docs/verdict-rules.md is missing";
  std::vector<std::string> ids;
  if (!doc) return ids;
  static const std::regex row(R"(^\| `([a-z_]+\.[a-z_]+)` \|)");
  for (std::string_view line : split(*doc, '\n')) {
    std::smatch m;
    const std::string l(line);
    if (std::regex_search(l, m, row)) ids.push_back(m[1]);
  }
  return ids;
}

TEST(VerdictRules, DocListsEveryRuleOfTheTableInItsOrder) {
  std::vector<std::string> table;
  for (const RuleInfo& r : verdict_rules()) table.emplace_back(r.id);
  EXPECT_EQ(documented_ids(), table);
}

TEST(VerdictRules, IdsAreUniqueAndEachHasASummary) {
  std::set<std::string> seen;
  for (const RuleInfo& r : verdict_rules()) {
    EXPECT_TRUE(seen.insert(std::string(r.id)).second) << r.id;
    EXPECT_FALSE(r.summary.empty()) << r.id;
    EXPECT_FALSE(r.chain.empty()) << r.id;
  }
}

// Every costly setting has its row in the doc's "Costly settings" table,
// which starts with its server and the parameter's first name.
TEST(VerdictRules, DocListsEveryCostlySetting) {
  const std::optional<std::string> doc =
      read_file(std::string(CP_SOURCE_DIR) + "/docs/verdict-rules.md");
  ASSERT_TRUE(doc.has_value());
  for (const CostlySetting& c : costly_settings()) {
    std::string first(c.parameter);
    first = first.substr(0, first.find(" ("));
    first = first.substr(0, first.find(" / "));
    const std::string row = std::string("| ") + c.server + " | `" + first + "`";
    EXPECT_NE(doc->find(row), std::string::npos) << row;
  }
}

// Samba's request caps in the costly-settings table are the smb driver's
// server limits (DriverSpec::hints), not a copy of them: same keys, same
// defaults, shown as the table's default value.
TEST(CostlySettings, SambaRequestCapsComeFromTheSmbDriversServerLimits) {
  int matched = 0;
  for (const transfer::ServerLimit& l : transfer::driver_spec("smb").hints.server_limits) {
    for (const CostlySetting& s : costly_settings()) {
      if (std::string_view(s.parameter) != l.key) continue;
      EXPECT_EQ(s.when, CostlyWhen::kBelowBytes) << s.parameter;
      EXPECT_EQ(s.bytes, l.server_default) << s.parameter;
      EXPECT_EQ(std::string(s.default_value), std::to_string(l.server_default)) << s.parameter;
      ++matched;
    }
  }
  EXPECT_EQ(matched, 3);  // smb2 max read, write and trans
}

}  // namespace
}  // namespace cp::analysis
