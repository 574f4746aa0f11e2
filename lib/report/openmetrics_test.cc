#include "report/openmetrics.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "report/test_runs.h"

namespace cp::report {
namespace {

// One sample line parsed back: family name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the exposition text (label values with \\ \" \n escapes); HELP and
// TYPE lines go to `typed` (name -> type).
std::vector<Sample> parse(const std::string& text, std::map<std::string, std::string>* typed) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      (*typed)[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    const size_t brace = line.find('{');
    s.name = line.substr(0, brace);
    size_t i = brace + 1;
    while (line[i] != '}') {
      const size_t eq = line.find('=', i);
      const std::string key = line.substr(i, eq - i);
      std::string value;
      for (i = eq + 2; line[i] != '"'; ++i) {
        if (line[i] == '\\') {
          ++i;
          value += line[i] == 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
      }
      s.labels[key] = value;
      ++i;
      if (line[i] == ',') ++i;
    }
    s.value = std::stod(line.substr(i + 2));
    out.push_back(s);
  }
  return out;
}

const Sample* find(const std::vector<Sample>& all, const std::string& name,
                   const std::map<std::string, std::string>& want) {
  for (const Sample& s : all) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (match) return &s;
  }
  return nullptr;
}

TEST(OpenMetrics, RowsCarryMedianRatioAndRunLabels) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  std::map<std::string, std::string> typed;
  const std::string text = export_openmetrics(stored::decode(run), a);
  const auto samples = parse(text, &typed);

  const Sample* smb = find(samples, "chokepoint_layer_throughput_bytes_per_second",
                           {{"path", "smb ram read"}, {"size", "100000000"}});
  ASSERT_NE(smb, nullptr) << text;
  EXPECT_EQ(smb->labels.at("protocol"), "smb");
  EXPECT_EQ(smb->labels.at("server"), "nas");
  EXPECT_EQ(smb->labels.at("client"), "mac");
  EXPECT_EQ(smb->labels.at("run_label"), "before");
  EXPECT_NEAR(smb->value, analysis::find_row(a, "smb:ram:read:100000000")->rate.median, 1);

  const Sample* ratio = find(samples, "chokepoint_layer_beneath_ratio", {{"path", "smb ram read"}});
  ASSERT_NE(ratio, nullptr);
  EXPECT_EQ(ratio->labels.at("beneath"), "tcp:server->client:send");
  EXPECT_NEAR(ratio->value, analysis::find_row(a, "smb:ram:read:100000000")->ratio, 1e-6);

  const Sample* tcp =
      find(samples, "chokepoint_layer_samples", {{"layer", "tcp"}, {"where", "server->client"}});
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->value, 5);
  // Labels that do not apply are left out, as Prometheus reads an empty one.
  EXPECT_EQ(tcp->labels.count("protocol"), 0u);
  EXPECT_EQ(tcp->labels.count("size"), 0u);

  // Every family is typed as a gauge; the text ends with # EOF.
  for (const Sample& s : samples) EXPECT_EQ(typed[s.name], "gauge") << s.name;
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  EXPECT_EQ(export_openmetrics(stored::decode(run), a, {.eof = false}).find("# EOF"),
            std::string::npos);
}

TEST(OpenMetrics, EachFindingIsOneVerdictSample) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  std::map<std::string, std::string> typed;
  const auto samples = parse(export_openmetrics(stored::decode(run), a), &typed);
  ASSERT_FALSE(a.findings.empty());
  for (const analysis::Finding& f : a.findings) {
    const Sample* v =
        find(samples, "chokepoint_path_verdict", {{"path", f.path}, {"layer", f.layer}});
    ASSERT_NE(v, nullptr) << f.path;
    EXPECT_EQ(v->value, 1);
  }
}

TEST(OpenMetrics, LabelValuesFromThePeerCannotBreakTheLine) {
  RunRecord run = testing::seed_run();
  run.label = "a\"b\\c\nd\x1b[31m";
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  std::map<std::string, std::string> typed;
  const std::string text = export_openmetrics(stored::decode(run), a);
  const auto samples = parse(text, &typed);
  const Sample* info = find(samples, "chokepoint_run_info", {});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->labels.at("run_label"), "a\"b\\c\nd [31m");
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(openmetrics_label_value("x\ty"), "x y");
}

}  // namespace
}  // namespace cp::report
