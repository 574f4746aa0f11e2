// Renders the HTML reports in headless Chromium and checks, in the page as
// Chromium laid it out, that every chart is there and drawn: each
// <svg class="chart"> has a size, each bar a positive rendered size and is
// what a hit test finds inside it (so it is painted and not covered), the
// capping bar is marked, and every sample has its dot. A probe script is
// appended to a copy of the page (the reports themselves carry no script);
// it writes its findings into the DOM that --dump-dom prints.
//
// Needs Debian's `chromium` (scripts/install-deps.sh installs it); fails,
// never skips, without it. Label: integration.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/process.h"
#include "report/html.h"
#include "report/row_text.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

constexpr const char* kProbe = R"(<script>
(function () {
  var out = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    svg.scrollIntoView();
    var box = svg.getBoundingClientRect();
    var bars = 0, drawn = 0, caps = 0;
    svg.querySelectorAll('rect.bar').forEach(function (bar) {
      bars++;
      if (bar.classList.contains('cap')) caps++;
      var r = bar.getBoundingClientRect();
      var style = getComputedStyle(bar);
      if (r.width <= 0 || r.height <= 0 || style.fill === 'none' || style.visibility !== 'visible' ||
          style.fillOpacity === '0') return;
      // Near the bar's top-left corner: off the sample dots and spread line.
      var hit = document.elementFromPoint(r.left + Math.min(2, r.width / 2), r.top + 2);
      if (hit === bar) drawn++;
    });
    var samples = 0;
    svg.querySelectorAll('circle.sample').forEach(function (c) {
      var r = c.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) samples++;
    });
    out.push([encodeURIComponent(svg.getAttribute('data-chart')), Math.round(box.width),
              Math.round(box.height), bars, drawn, caps, samples].join(' '));
  });
  var pre = document.createElement('pre');
  pre.id = 'cp-probe';
  pre.textContent = 'charts ' + out.length + '\n' + out.join('\n') + '\nend';
  document.body.appendChild(pre);
})();
</script>)";

struct Chart {
  int width = 0, height = 0, bars = 0, drawn = 0, caps = 0, samples = 0;
};

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string find_chromium() {
  if (const char* env = std::getenv("CHROMIUM"); env && *env) return env;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      std::string p = std::string(dir) + "/" + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return {};
}

class ChromiumRender : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    ASSERT_FALSE(chromium_.empty())
        << "chromium is not installed: run scripts/install-deps.sh as root (it installs Debian's "
           "`chromium`), or set CHROMIUM=/path/to/chromium";
    std::string tmpl = (std::filesystem::temp_directory_path() / "cp_html_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // Renders `html` with the probe and returns the charts it found by id.
  std::map<std::string, Chart> render(const std::string& html, const std::string& name) {
    std::string page = html;
    const size_t body = page.rfind("</body>");
    EXPECT_NE(body, std::string::npos);
    page.insert(body, kProbe);
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << page;
    RunResult r = run_command(
        {chromium_, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--user-data-dir=" + dir_ + "/profile-" + name,
         "--window-size=1280,20000", "--dump-dom", "file://" + path},
        "", 240);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t start = r.out.find("<pre id=\"cp-probe\">");
    const size_t end = r.out.find("</pre>", start);
    std::map<std::string, Chart> charts;
    if (start == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "the probe did not run; chromium printed:\n"
                    << r.out.substr(0, 2000) << "\nstderr:\n"
                    << r.err.substr(0, 2000);
      return charts;
    }
    std::istringstream in(r.out.substr(start + 19, end - start - 19));
    std::string word;
    size_t n = 0;
    in >> word >> n;
    EXPECT_EQ(word, "charts");
    for (size_t i = 0; i < n; ++i) {
      std::string id;
      Chart c;
      in >> id >> c.width >> c.height >> c.bars >> c.drawn >> c.caps >> c.samples;
      charts[percent_decode(id)] = c;
    }
    in >> word;
    EXPECT_EQ(word, "end");
    EXPECT_EQ(charts.size(), n) << "two charts share an id";
    return charts;
  }

  std::string chromium_, dir_;
};

TEST_F(ChromiumRender, RunPageChartsAreDrawn) {
  RunRecord run = testing::seed_run();
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  auto charts = render(run_html(stored::decode(run), a), "run.html");
  std::set<std::string> want;
  for (const auto& f : a.findings) {
    if (f.rows.empty() || f.path == "cache" || f.path == "errors" || f.path == "cpu") continue;
    const std::string id =
        "path:" + (f.path == "tcp" ? row_label(*analysis::find_row(a, f.rows.back())) : f.path);
    want.insert(id);
    auto it = charts.find(id);
    if (it == charts.end()) {
      ADD_FAILURE() << "chart missing: " << id;
      continue;
    }
    const Chart& c = it->second;
    EXPECT_GT(c.width, 100) << id;
    EXPECT_GT(c.height, 20) << id;
    EXPECT_EQ(c.bars, static_cast<int>(f.rows.size())) << id;
    EXPECT_EQ(c.drawn, c.bars) << id << ": bars not drawn";
    EXPECT_EQ(c.caps, f.cap.empty() ? 0 : 1) << id;
    size_t samples = 0;
    for (const auto& key : f.rows) samples += analysis::find_row(a, key)->samples.size();
    EXPECT_EQ(c.samples, static_cast<int>(samples)) << id;
  }
  EXPECT_EQ(want.size(), 9u);  // 2 paths, TCP both ways, 3 protocols over RAM, 2 from disk
  want.insert("all");
  ASSERT_TRUE(charts.count("all"));
  EXPECT_GT(charts["all"].drawn, 0);
  EXPECT_EQ(charts["all"].drawn, charts["all"].bars);
  std::set<std::string> got;
  for (const auto& [id, c] : charts) got.insert(id);
  EXPECT_EQ(got, want);
}

TEST_F(ChromiumRender, ComparePageOverlaysAreDrawn) {
  analysis::Comparison c = analysis::compare_runs(stored::decode(testing::seed_run()),
                                                  stored::decode(testing::tuned_run()));
  auto charts = render(compare_html(c), "compare.html");
  ASSERT_EQ(charts.size(), c.rows.size());
  for (const auto& d : c.rows) {
    const std::string id = "compare:" + d.key;
    auto it = charts.find(id);
    if (it == charts.end()) {
      ADD_FAILURE() << "chart missing: " << id;
      continue;
    }
    EXPECT_EQ(it->second.bars, 2) << id;
    EXPECT_EQ(it->second.drawn, 2) << id << ": before/after bars not drawn";
    EXPECT_EQ(it->second.samples, static_cast<int>(d.a_samples.size() + d.b_samples.size())) << id;
  }
}

// The probe itself must be able to fail: a page whose bars are invisible
// (a broken stylesheet) or absent is caught.
TEST_F(ChromiumRender, ProbeCatchesUndrawnAndEmptyCharts) {
  RunRecord run = testing::seed_run();
  std::string html = run_html(stored::decode(run), analysis::analyze(stored::decode(run)));
  std::string hidden = html;
  hidden.replace(hidden.find("</style>"), 8, "rect.bar{fill:none!important}</style>");
  auto charts = render(hidden, "hidden.html");
  ASSERT_TRUE(charts.count("path:server -> client"));
  EXPECT_EQ(charts["path:server -> client"].drawn, 0);

  std::string empty = html;
  for (size_t p; (p = empty.find("<rect class=\"bar")) != std::string::npos;) {
    empty.erase(p, empty.find("</rect>", p) + 7 - p);
  }
  charts = render(empty, "empty.html");
  ASSERT_TRUE(charts.count("path:server -> client"));
  EXPECT_EQ(charts["path:server -> client"].bars, 0);
}

}  // namespace
}  // namespace cp::report
