#include "report/html.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <regex>

#include "report/compare_report.h"
#include "report/finding_text.h"
#include "report/row_text.h"
#include "report/summary.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The <svg ...>...</svg> element whose data-chart is `id`, or "".
std::string chart(const std::string& html, const std::string& id) {
  const std::string open = "data-chart=\"" + html_escape(id) + "\"";
  size_t p = html.find(open);
  if (p == std::string::npos) return {};
  size_t start = html.rfind("<svg", p);
  size_t end = html.find("</svg>", p);
  return html.substr(start, end - start);
}

// Nothing a browser would fetch: the page must open offline, years later.
void expect_self_contained(const std::string& html) {
  for (const char* bad : {"http:", "https:", "//", "src=", "href=", "url(", "@import", "<script",
                          "<link", "<iframe", "<img"}) {
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  }
}

// The page opens with the text report's summary: a row per path, before the
// ladder's charts.
TEST(Html, OpensWithTheSummaryTableARowPerPath) {
  const RunRecord run = testing::seed_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  const std::string html = run_html(stored::decode(run), a);
  const auto paths = analysis::path_verdicts(a);
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(count(html, "<tr data-path="), paths.size());
  for (const auto& p : paths) {
    EXPECT_NE(html.find("<tr data-path=\"" + html_escape(p.path) + "\""), std::string::npos)
        << p.path;
  }
  EXPECT_LT(html.find("class=\"summary\""), html.find("<svg"));
}

TEST(Html, Escape) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(Html, RunPageHasAChartPerPath) {
  RunRecord run = testing::seed_run();
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  std::string html = run_html(stored::decode(run), a);
  expect_self_contained(html);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find(html_escape(headline_text(a))), std::string::npos);
  // Every finding says on the page what the text report and the JSON say.
  for (const auto& f : a.findings) {
    EXPECT_NE(html.find(html_escape(finding_sentence(f))), std::string::npos) << f.rule;
  }
  size_t charted = 0;
  for (const auto& f : a.findings) {
    if (f.rows.empty() || f.path == "cache" || f.path == "errors" || f.path == "cpu") continue;
    ++charted;
    const std::string name =
        f.path == "tcp" ? row_label(*analysis::find_row(a, f.rows.back())) : f.path;
    std::string svg = chart(html, "path:" + name);
    ASSERT_FALSE(svg.empty()) << "no chart for " << f.path;
    // A bar per layer, the capping one marked, a dot per sample.
    EXPECT_EQ(count(svg, "<rect class=\"bar"), f.rows.size()) << f.path;
    std::regex cap(R"re(<rect class="[^"]*\bcap\b)re");
    EXPECT_EQ(
        std::distance(std::sregex_iterator(svg.begin(), svg.end(), cap), std::sregex_iterator()),
        f.cap.empty() ? 0 : 1)
        << f.path;
    if (!f.cap.empty()) {
      EXPECT_NE(svg.find("data-key=\"" + html_escape(f.cap) + "\""), std::string::npos);
    }
    size_t samples = 0;
    for (const auto& key : f.rows) samples += analysis::find_row(a, key)->samples.size();
    EXPECT_EQ(count(svg, "<circle class=\"sample"), samples) << f.path;
    // Bars have a positive width.
    std::regex width(R"re(class="bar[^"]*"[^>]* width="([0-9.]+)")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), width);
         it != std::sregex_iterator(); ++it) {
      EXPECT_GT(std::stod((*it)[1]), 0) << f.path;
    }
  }
  EXPECT_EQ(charted, 9u);  // 2 paths, TCP both ways, 3 protocols over RAM, 2 from disk
  EXPECT_EQ(count(html, "<svg class=\"chart\""), charted + 1);  // + every measurement
  EXPECT_FALSE(chart(html, "all").empty());
  // The verdict's hint is on the page.
  EXPECT_NE(html.find("smb2 max read"), std::string::npos);
}

TEST(Html, CapOfTheSeedDownPathIsTheServerDisk) {
  RunRecord run = testing::seed_run();
  std::string svg = chart(run_html(stored::decode(run), analysis::analyze(stored::decode(run))),
                          "path:server -> client");
  EXPECT_NE(svg.find(R"(<rect class="bar cap" data-key="disk:server:read:100000000")"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(R"(<rect class="bar link" data-key="link")"), std::string::npos);
}

TEST(Html, CacheSuspectedBarIsMarked) {
  RunRecord run = testing::SeedRun(4, "")
                      .stage("disk", "server", "read", 10'000'000, {900, 950, 940}, true)
                      .build();
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  std::string html = run_html(stored::decode(run), a);
  EXPECT_NE(html.find("cache suspected"), std::string::npos);
  EXPECT_NE(chart(html, "path:server -> client").find("cache\" data-key"), std::string::npos);
}

TEST(Html, EmptyRunStillRenders) {
  RunRecord run = testing::SeedRun(5, "").build();
  std::string html = run_html(stored::decode(run), analysis::analyze(stored::decode(run)));
  expect_self_contained(html);
  EXPECT_NE(html.find("No path has samples to chart."), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

// Each degraded fact is a row keyed by host and fact; a run without any has no table.
TEST(Html, DegradedFactsGetARowEach) {
  RunRecord run = testing::SeedRun(7, "").stage("tcp", "server->client", "send", 0, {100}).build();
  EXPECT_EQ(run_html(stored::decode(run), analysis::analyze(stored::decode(run)))
                .find("class=\"degraded\""),
            std::string::npos);
  run.hosts[0].facts_json =
      R"({"hostname":"nas","degraded":[{"fact":"process_netns","method":"m","privilege":"p"},)"
      R"({"fact":"smb_negotiated","method":"m","privilege":"p"}]})";
  const std::string html = run_html(stored::decode(run), analysis::analyze(stored::decode(run)));
  expect_self_contained(html);
  EXPECT_NE(html.find("<tr data-role=\"server\" data-fact=\"process_netns\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-role=\"server\" data-fact=\"smb_negotiated\">"), std::string::npos);
}

TEST(Html, LabelsAreEscaped) {
  RunRecord run =
      testing::SeedRun(6, "<b>x</b>").stage("tcp", "server->client", "send", 0, {100}).build();
  std::string html = run_html(stored::decode(run), analysis::analyze(stored::decode(run)));
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
}

// A hostile server's hostname (a script, a control character) and label stay
// text in the page: escaped where they are shown, nothing the browser runs.
TEST(SecurityHtml, HostileHostnameAndLabelAreEscaped) {
  const std::string host = "<script>alert(1)</script>\x1b[2J&\"'";
  RunRecord run = testing::SeedRun(6, "<iframe onload=alert(1)>")
                      .stage("tcp", "server->client", "send", 0, {100})
                      .build();
  boost::json::object facts = boost::json::parse(run.hosts[0].facts_json).as_object();
  facts["hostname"] = host;
  facts["kernel"] = "6.1\n<script>x</script>";
  run.hosts[0].facts_json = boost::json::serialize(facts);
  const std::string html = run_html(stored::decode(run), analysis::analyze(stored::decode(run)));
  expect_self_contained(html);  // no <script, no <iframe
  EXPECT_NE(html.find("&lt;iframe onload=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find(html_escape(host)), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;x&lt;/script&gt;"), std::string::npos);
}

TEST(Html, ComparePageOverlaysBothRuns) {
  analysis::Comparison c = analysis::compare_runs(stored::decode(testing::seed_run()),
                                                  stored::decode(testing::tuned_run()));
  std::string html = compare_html(c);
  expect_self_contained(html);
  for (const auto& d : c.rows) {
    std::string svg = chart(html, "compare:" + d.key);
    ASSERT_FALSE(svg.empty()) << d.key;
    EXPECT_EQ(count(svg, "<rect class=\"bar a\""), 1u);
    EXPECT_EQ(count(svg, "<rect class=\"bar b"), 1u);
    EXPECT_EQ(count(svg, "<circle class=\"sample a\""), d.a_samples.size());
    EXPECT_EQ(count(svg, "<circle class=\"sample b\""), d.b_samples.size());
  }
  EXPECT_NE(chart(html, "compare:smb:ram:read:100000000").find("bar b faster"), std::string::npos);
  EXPECT_NE(html.find("samba.global.smb2 max read"), std::string::npos);
  EXPECT_NE(html.find("Only in A: FTP from RAM read"), std::string::npos);
}

TEST(Html, ComparePageMarksDriftAndControls) {
  analysis::Comparison c = analysis::compare_runs(stored::decode(testing::drift_run(false)),
                                                  stored::decode(testing::drift_run(true)));
  std::string html = compare_html(c);
  expect_self_contained(html);
  EXPECT_NE(html.find("data-controls=\"8\""), std::string::npos);
  // Each row of the table carries its key and verdict; the chart of a
  // drifting row draws B's bar as drift.
  for (const auto& d : c.rows) {
    EXPECT_NE(html.find("<tr data-key=\"" + html_escape(d.key) + "\" data-verdict=\"" +
                        delta_verdict_name(d.verdict) + "\">"),
              std::string::npos)
        << d.key;
  }
  EXPECT_NE(chart(html, "compare:disk:server:write:100000000").find("bar b drift"),
            std::string::npos);
  EXPECT_NE(chart(html, "compare:smb:disk:read:100000000").find("bar b faster"), std::string::npos);
  EXPECT_EQ(count(html, "<td class=\"muted\">control</td>"), c.drift.controls.size());
}

}  // namespace
}  // namespace cp::report
