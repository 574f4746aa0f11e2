// The verdict read in ten seconds: a summary line per path, a short headline,
// each finding in brief; the evidence only with --explain.
#include "report/summary.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>

#include "report/finding_text.h"
#include "report/report.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

size_t words(const std::string& s) {
  std::istringstream in(s);
  size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

// A finding of `rule` on `path` naming `layer`.
analysis::Finding made(const std::string& rule, const std::string& path, const std::string& layer) {
  analysis::Finding f;
  f.rule = rule;
  f.path = path;
  f.layer = layer;
  return f;
}

std::vector<RunRecord> runs() {
  return {testing::seed_run(), testing::tuned_run(), testing::drift_run(false),
          testing::drift_run(true)};
}

TEST(Summary, OneLinePerPathWithItsLayerFigureAndConfidence) {
  for (const RunRecord& run : runs()) {
    const analysis::Analysis a = analysis::analyze(stored::decode(run));
    const std::vector<analysis::PathVerdict> paths = analysis::path_verdicts(a);
    const std::vector<SummaryLine> lines = summary_lines(a);
    ASSERT_EQ(lines.size(), paths.size());
    ASSERT_FALSE(lines.empty());
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].path, paths[i].path);
      EXPECT_EQ(lines[i].confidence.rfind(confidence_name(paths[i].confidence), 0), 0u)
          << lines[i].path;
      if (paths[i].figure > 0) {
        EXPECT_NEAR(std::stod(lines[i].figure), paths[i].figure / 1e6, 0.051) << lines[i].path;
      }
    }
  }
}

TEST(Summary, CappedByNamesTheLayerOfTheFinding) {
  analysis::Finding f;
  f.layer = "server disk";
  EXPECT_EQ(capped_by(f), "the server disk");
  f.layer = "smb";
  EXPECT_EQ(capped_by(f), "the SMB layer");
  f.layer = "smb + disk";
  EXPECT_EQ(capped_by(f), "SMB + the server disk");
  f.layer = "tcp";
  EXPECT_EQ(capped_by(f), "TCP");
  f.layer = "probe";  // chokepoint's own client, not a protocol
  EXPECT_EQ(capped_by(f), "chokepoint's client");
  f.layer = "undecided";
  f.undecided_reason = "noise";
  EXPECT_EQ(capped_by(f), "cannot tell (noise)");
  f.layer = "cpu";
  f.cpu.kind = "quota";
  f.cpu.host = "server";
  f.cpu.process = "smbd";
  f.cpu.pct = 20;
  EXPECT_EQ(capped_by(f), "the CPU (smbd at its quota, server)");
}

// Each finding in brief stays short, and one that rests on another listed
// finding names its path instead of quoting its sentence.
TEST(Summary, BriefFindingsAreShortAndNameWhatTheyRestOnByPath) {
  size_t resting = 0;  // findings that rest on another
  for (const RunRecord& run : runs()) {
    const analysis::Analysis a = analysis::analyze(stored::decode(run));
    for (const analysis::Finding& f : a.findings) {
      const std::string brief = finding_brief(f, a);
      EXPECT_LE(words(brief), 45u) << brief;
      EXPECT_LE(brief.size(), finding_text(f).size()) << brief;
      if (f.because.empty()) continue;
      const analysis::Finding& b = f.because.front();
      EXPECT_EQ(brief.find(finding_sentence(b)), std::string::npos) << brief;
      ++resting;
    }
  }
  (void)resting;  // the stored runs above may have none: the next test builds them
}

// A disk path at its RAM figure's ceiling rests on the RAM path's finding,
// which the report lists: named by its path. TCP explained inside a path is
// listed nowhere else: named by its row and cause.
TEST(Summary, AFindingRestingOnAnotherNamesItsPathOrItsCause) {
  analysis::Analysis a;
  analysis::Finding ram = made("protocol.layer", "smb ram read", "smb");
  ram.subject.key = "smb:ram:read:100000000";
  static_cast<analysis::RowIdentity&>(ram.subject) = {"smb", "ram", "", "read", 100'000'000};
  ram.subject.named = analysis::CitedName::kMediumOp;
  ram.subject.n = 5;
  ram.subject.median = 50e6;
  ram.beneath.key = "tcp:server->client:send";
  ram.beneath.layer = "tcp";
  ram.beneath.named = analysis::CitedName::kLayer;
  ram.ratio = 0.43;
  analysis::Finding disk = ram;
  disk.rule = "protocol.at_ram_ceiling";
  disk.path = "smb disk read";
  disk.because.push_back(ram);
  analysis::Finding tcp_cpu = made("tcp.cpu", "tcp", "cpu");
  tcp_cpu.cpu.kind = "thread";
  tcp_cpu.cpu.host = "client";
  tcp_cpu.cpu.process = "chokepoint-agen";
  tcp_cpu.cpu.role = "agent";
  tcp_cpu.subject.key = "tcp:server->client:send";
  tcp_cpu.subject.layer = "tcp";
  tcp_cpu.subject.where = "server->client";
  tcp_cpu.subject.named = analysis::CitedName::kLabel;
  analysis::Finding path = made("path.tcp", "server -> client", "cpu");
  path.cpu = tcp_cpu.cpu;
  path.because.push_back(tcp_cpu);
  a.findings = {ram, disk, path};
  const std::string d = finding_brief(a.findings[1], a);
  EXPECT_NE(d.find("see smb ram read"), std::string::npos) << d;
  EXPECT_EQ(d.find(finding_sentence(ram)), std::string::npos) << d;
  const std::string p = finding_brief(a.findings[2], a);
  EXPECT_NE(p.find("TCP server -> client held by the CPU"), std::string::npos) << p;
  EXPECT_EQ(p.find(finding_sentence(tcp_cpu)), std::string::npos) << p;
}

TEST(Summary, TextOpensWithTheSummaryAndExplainAddsTheEvidence) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  const std::string brief = run_text(stored::decode(run), a, {});
  TextOptions explain;
  explain.explain = true;
  const std::string full = run_text(stored::decode(run), a, explain);
  // The summary comes before the ladder, in both.
  for (const std::string& t : {brief, full}) {
    ASSERT_NE(t.find("\nSummary"), std::string::npos);
    EXPECT_LT(t.find("\nSummary"), t.find("\nLadder"));
  }
  // Every finding's full sentence is in --explain only; its brief in the
  // default where it says more than its summary line.
  for (const analysis::Finding& f : a.findings) {
    EXPECT_NE(full.find(finding_text(f)), std::string::npos) << f.rule;
    EXPECT_EQ(brief.find(finding_text(f)), std::string::npos) << f.rule;
    EXPECT_EQ(brief.find(finding_brief(f, a)) != std::string::npos, brief_adds_to_summary(f))
        << f.rule;
  }
  EXPECT_LT(brief.size(), full.size());
}

TEST(Summary, JsonCarriesTheBriefOfEachFindingAndTheShortHeadline) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  const auto doc = boost::json::parse(run_json(stored::decode(run), a)).as_object();
  const auto& v = doc.at("verdict").as_object();
  EXPECT_EQ(v.at("headline_brief").as_string(), headline_brief(a));
  const auto& findings = v.at("findings").as_array();
  ASSERT_EQ(findings.size(), a.findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    EXPECT_EQ(findings[i].at("brief").as_string(), finding_brief(a.findings[i], a));
  }
}

// A share's small-file create row of 4 KiB files at `per_s` creates/s, as a
// finding cites it.
analysis::Cited files_create(const std::string& driver, const std::string& medium, double per_s) {
  analysis::Cited c;
  c.key = "files:" + driver + ":" + medium + ":create:4096";
  c.layer = "files";
  c.op = "create";
  c.size = 4096;
  c.n = 1;
  c.median = per_s;  // creates/s
  return c;
}

// A small-file finding's figure is ops/s of small files: its summary line
// gives the MB/s a copy of them moves (ops/s x file size), its brief the rate
// of operations first.
TEST(Summary, ASmallFileFindingsFigureIsTheBytesItsOperationsMove) {
  analysis::Analysis a;
  analysis::Finding f = made("files.round_trips", "smb disk files create", "round trips");
  f.subject = files_create("smb", "disk", 250);
  a.findings.push_back(f);
  a.headline_finding = 0;
  const std::vector<SummaryLine> lines = summary_lines(a);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_DOUBLE_EQ(std::stod(lines[0].figure), 1.0);  // 250 x 4096 B = 1.02 MB/s
  EXPECT_EQ(lines[0].capped_by, "the round trips");
  const std::string brief = headline_brief(a);
  EXPECT_NE(brief.find("250 creates/s"), std::string::npos) << brief;
}

// chokepoint's client pacing a share's small files: its line says so and
// that the figure is a lower bound; the text renders the rule's numbers.
TEST(Summary, AFilesClientFindingIsChokepointsClientAndALowerBound) {
  analysis::Analysis a;
  analysis::Finding f = made("files.client", "ftp ram files create", "probe");
  f.lower_bound = true;
  f.subject = files_create("ftp", "ram", 500);
  f.numbers = {{"ops_per_s", 500},
               {"latency_median_us", 1900},
               {"client_cpu_share", 0.7},
               {"client_cpu_us_per_op", 1400}};
  f.words["driver"] = "ftp";
  a.findings.push_back(f);
  a.headline_finding = 0;
  const std::vector<SummaryLine> lines = summary_lines(a);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].capped_by, "chokepoint's client");
  EXPECT_TRUE(lines[0].confidence.ends_with(", lower bound")) << lines[0].confidence;
  EXPECT_FALSE(finding_brief(a.findings[0], a).empty());
}

// A CPU note on a small-file row gives its operations per second, as the
// ladder does, not the bytes its 4 KiB files move as a tiny MB/s.
TEST(Summary, ACpuNoteOnASmallFileRowGivesItsOperationsPerSecond) {
  analysis::Analysis a;
  analysis::Finding f = made("cpu.bound", "", "cpu");
  f.subject = files_create("smb", "disk", 405);
  f.cpu.kind = "busy";
  f.cpu.host = "both";
  a.findings.push_back(f);
  const std::string brief = finding_brief(a.findings[0], a);
  EXPECT_NE(brief.find(" at 405 creates/s ("), std::string::npos) << brief;
  const std::string text = finding_text(a.findings[0]);
  EXPECT_NE(text.find(" does 405 operations/s while "), std::string::npos) << text;
}

}  // namespace
}  // namespace cp::report
