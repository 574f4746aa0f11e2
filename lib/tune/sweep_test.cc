#include "tune/sweep.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <set>

#include "core/error.h"

namespace cp::tune {
namespace {

TEST(Schedule, InterleavesValuesInEveryRoundOriginalFirst) {
  auto s = schedule(3, 2);
  ASSERT_EQ(s.size(), 6u);
  const std::vector<size_t> order = {0, 1, 2, 0, 1, 2};
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].value, order[i]);
    EXPECT_EQ(s[i].round, i < 3 ? 1 : 2);
  }
}

// A value equal to the host's original runs once, as the original's slot,
// with a note; an axis left with nothing but its original is a usage error.
TEST(DropOriginals, AValueEqualToTheOriginalIsTheOriginalsSlot) {
  SweepSetup s;
  s.axes.push_back({&find_knob("server.readahead"), {"16", "8192", "4096"}});
  std::vector<std::string> notes;
  drop_originals(s, {"8192"}, [&](const std::string& n) { notes.push_back(n); });
  EXPECT_EQ(s.axes[0].values, (std::vector<std::string>{"16", "4096"}));
  EXPECT_EQ(notes.size(), 1u);
  // Slots: the original and the two others, each once per round.
  EXPECT_EQ(schedule(s.axes[0].values.size() + 1, 3).size(), 9u);
  SweepSetup only;
  only.axes.push_back({&find_knob("server.readahead"), {"8192"}});
  try {
    drop_originals(only, {"8192"}, [](const std::string&) {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
}

pipeline::Plan lab_like_plan() {
  pipeline::Plan p;
  for (const char* proto : {"ftp", "smb"}) {
    for (const char* medium : {"ram", "disk"}) {
      pipeline::SharePlan s;
      s.name = std::string(proto) + "-" + medium;
      s.driver = proto;
      s.medium = medium;
      p.shares.push_back(s);
    }
  }
  return p;
}

TEST(AffectedPlan, ReadaheadRunsOnlyTheDiskShares) {
  pipeline::Plan p = affected_plan(find_knob("server.readahead"), lab_like_plan());
  EXPECT_FALSE(p.disk_enabled);
  EXPECT_FALSE(p.tcp_enabled);
  ASSERT_EQ(p.shares.size(), 2u);
  for (const auto& s : p.shares) EXPECT_EQ(s.medium, "disk");
}

TEST(AffectedPlan, SambaRunsOnlySmbAndTcpRunsEverything) {
  pipeline::Plan p = affected_plan(find_knob("samba.smb2_max_read"), lab_like_plan());
  ASSERT_EQ(p.shares.size(), 2u);
  for (const auto& s : p.shares) EXPECT_EQ(s.driver, "smb");
  pipeline::Plan t = affected_plan(find_knob("server.tcp_wmem"), lab_like_plan());
  EXPECT_TRUE(t.tcp_enabled);
  EXPECT_EQ(t.shares.size(), 4u);
}

TEST(AffectedPlan, NoAffectedStageIsAConfigError) {
  try {
    affected_plan(find_knob("client.afp_depth"), lab_like_plan());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
}

std::vector<double> around(double level, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(level * (1 + 0.01 * (i % 5 - 2)) + i);
  return v;
}

TEST(Analyze, RecommendsTheSignificantlyBestValue) {
  LayerSamples l{"smb disk read 100 MB", {around(500e6, 9), around(700e6, 9), around(1000e6, 9)}};
  TuneResult r = analyze_sweep("samba.smb2_max_read", {"65536", "1048576", "8388608"}, {l}, 3);
  EXPECT_EQ(r.recommended, "8388608");
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_TRUE(r.layers[0].values[1].better);
  EXPECT_TRUE(r.layers[0].values[2].better);
  EXPECT_NEAR(r.layers[0].values[2].change, 1.0, 0.05);
  // Holm: the adjusted p is never below the raw one.
  EXPECT_GE(r.layers[0].values[1].p_holm, r.layers[0].values[1].p);
}

TEST(Analyze, NoSignificantGainKeepsWhatYouHave) {
  // Same level everywhere: shuffled copies of one set.
  std::vector<double> a = around(500e6, 9), b = a, c = a;
  std::rotate(b.begin(), b.begin() + 3, b.end());
  TuneResult r = analyze_sweep("server.readahead", {"131072", "4194304"}, {{"x", {a, b}}}, 3);
  EXPECT_EQ(r.recommended, "");
  EXPECT_FALSE(r.layers[0].values[1].better);
  EXPECT_FALSE(r.layers[0].values[1].worse);
}

TEST(Analyze, TooFewSamplesGiveNoVerdict) {
  TuneResult r = analyze_sweep("k", {"a", "b"}, {{"x", {{1, 2}, {10, 20}}}}, 1);
  EXPECT_TRUE(r.layers[0].values[1].too_few);
  EXPECT_EQ(r.recommended, "");
}

TEST(Analyze, AValueThatHurtsAnotherLayerIsNotRecommended) {
  LayerSamples read{"read", {around(500e6, 9), around(900e6, 9)}};
  LayerSamples write{"write", {around(500e6, 9), around(200e6, 9)}};
  TuneResult r = analyze_sweep("k", {"orig", "v"}, {read, write}, 3);
  EXPECT_TRUE(r.layers[0].values[1].better);
  EXPECT_TRUE(r.layers[1].values[1].worse);
  EXPECT_EQ(r.recommended, "");
}

TEST(Analyze, JsonCarriesTheRecommendationAndEveryValue) {
  LayerSamples l{"smb ram read", {around(500e6, 9), around(1000e6, 9)}};
  TuneResult r = analyze_sweep("samba.smb2_max_read", {"65536", "8388608"}, {l}, 3);
  auto j = boost::json::parse(result_json(r)).as_object();
  EXPECT_EQ(j.at("recommended").as_string(), "8388608");
  EXPECT_EQ(j.at("layers").as_array()[0].at("values").as_array().size(), 2u);
  const std::string html = result_html(r, {l});
  size_t dots = 0;
  for (size_t at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1))
    ++dots;
  EXPECT_EQ(dots, 18u);  // every sample a dot
}

TEST(Grid, CrossTriesEveryCombinationOnceOriginalFirst) {
  const auto c = combinations({2, 3}, Grid::kCross);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c.front(), (std::vector<size_t>{0, 0}));
  std::set<std::vector<size_t>> seen(c.begin(), c.end());
  EXPECT_EQ(seen.size(), 6u);
  for (const auto& x : c) {
    EXPECT_LT(x[0], 2u);
    EXPECT_LT(x[1], 3u);
  }
}

TEST(Grid, OneAtATimeMovesOneKnobWithTheOthersAtTheirOriginal) {
  const auto c = combinations({2, 3}, Grid::kOneAtATime);
  const std::vector<std::vector<size_t>> want = {{0, 0}, {1, 0}, {0, 1}, {0, 2}};
  EXPECT_EQ(c, want);
  for (const auto& x : c) EXPECT_LE((x[0] > 0) + (x[1] > 0), 1);
}

TEST(Grid, AffectedPlanRunsTheStagesOfEveryKnob) {
  pipeline::Plan p = affected_plan(
      std::vector<const Knob*>{&find_knob("server.readahead"), &find_knob("samba.smb2_max_read")},
      lab_like_plan());
  std::vector<std::string> names;
  for (const auto& s : p.shares) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ftp-disk", "smb-ram", "smb-disk"}));
  // Every knob must have a stage of its own.
  EXPECT_THROW(affected_plan(std::vector<const Knob*>{&find_knob("samba.smb2_max_read"),
                                                      &find_knob("client.afp_depth")},
                             lab_like_plan()),
               Error);
}

TEST(Analyze, HolmCorrectsOverEveryComparisonOfEveryLayer) {
  // Two layers, two values: four comparisons in one family.
  LayerSamples a{"a", {around(500e6, 9), around(900e6, 9), around(500e6, 9)}};
  LayerSamples b{"b", {around(500e6, 9), around(500e6, 9), around(900e6, 9)}};
  TuneResult r = analyze_sweep("x", {"o", "v1", "v2"}, {a, b}, 3);
  const double p = r.layers[0].values[1].p;
  // The smallest of four raw p values is multiplied by four.
  EXPECT_NEAR(r.layers[0].values[1].p_holm, std::min(1.0, 4 * p), 1e-12);
  EXPECT_TRUE(r.layers[0].values[1].better);
  EXPECT_TRUE(r.layers[1].values[2].better);
}

TEST(Analyze, AGridRecommendsTheBestCombinationByItsLabel) {
  LayerSamples l{"smb ram read",
                 {around(500e6, 9), around(600e6, 9), around(520e6, 9), around(1000e6, 9)}};
  TuneResult r = analyze_sweep("a x b", {"a=1 b=1", "a=2 b=1", "a=1 b=2", "a=2 b=2"}, {l}, 3);
  EXPECT_EQ(r.recommended, "a=2 b=2");
}

TEST(ResultJson, AStoredGridReadsBackItsAxesAndEachCombinationsSettings) {
  LayerSamples l{"smb ram read", {around(500e6, 9), around(600e6, 9)}};
  TuneResult r = analyze_sweep("a x b", {"a=1 b=1", "a=2 b=1"}, {l}, 3);
  r.grid = "cross";
  r.knobs = {"a", "b"};
  r.settings = {{"1", "1"}, {"2", "1"}};
  TuneResult back;
  read_grid(result_json(r), back);
  EXPECT_EQ(back.grid, "cross");
  EXPECT_EQ(back.knobs, r.knobs);
  EXPECT_EQ(back.settings, r.settings);

  TuneResult old;  // a row from before grids, or not JSON at all: nothing read
  read_grid(R"({"knob":"a"})", old);
  read_grid("not json", old);
  EXPECT_TRUE(old.grid.empty());
  EXPECT_TRUE(old.knobs.empty());
  EXPECT_TRUE(old.settings.empty());
}

}  // namespace
}  // namespace cp::tune

namespace cp::tune {
namespace {

// The issue's readahead sweep in shape: 9 samples a value, the new value's
// median +56 % and above the original's p75, yet the samples overlap too
// much for p < 0.05: no recommendation, but the unsettled field names the
// value, its layer and more rounds than were run.
TEST(Analyze, AMoveBeyondTheSpreadWithoutSignificanceNamesTheRoundsToSettleIt) {
  const std::vector<double> orig = {433, 500, 560, 600, 640, 700, 760, 1100, 1529};
  const std::vector<double> high = {450, 520, 700, 900, 1000, 1050, 1200, 1300, 1529};
  TuneResult r =
      analyze_sweep("server.readahead", {"8192", "4194304"}, {{"ftp disk read", {orig, high}}}, 3);
  EXPECT_TRUE(r.recommended.empty());
  const ValueStats& v = r.layers[0].values[1];
  ASSERT_FALSE(v.better);
  EXPECT_GT(v.median, r.layers[0].values[0].p75);
  EXPECT_TRUE(v.beyond_spread);
  ASSERT_TRUE(r.unsettled.has_value());
  EXPECT_EQ(r.unsettled->value, "4194304");
  EXPECT_EQ(r.unsettled->layer, "ftp disk read");
  EXPECT_GT(r.unsettled->change, 0.3);
  EXPECT_GT(r.unsettled->suggested_rounds, 3);
  EXPECT_LE(r.unsettled->suggested_rounds, 100);
  const auto j = boost::json::parse(result_json(r)).as_object();
  EXPECT_EQ(j.at("unsettled").at("suggested_rounds").as_int64(), r.unsettled->suggested_rounds);
}

// Values inside the original's spread: nothing to settle.
TEST(Analyze, AMoveWithinTheSpreadLeavesNothingUnsettled) {
  const std::vector<double> orig = {400, 500, 600, 700, 800, 900, 1000, 1100, 1200};
  const std::vector<double> same = {420, 520, 620, 720, 820, 920, 1020, 1120, 1220};
  TuneResult r = analyze_sweep("k", {"a", "b"}, {{"x", {orig, same}}}, 3);
  EXPECT_FALSE(r.unsettled.has_value());
  EXPECT_FALSE(r.layers[0].values[1].beyond_spread);
  EXPECT_TRUE(boost::json::parse(result_json(r)).as_object().at("unsettled").is_null());
}

// A larger change or a tighter spread needs fewer rounds; more comparisons
// (a stricter Holm level) need more.
TEST(SuggestedRounds, FallWithTheEffectAndRiseWithTheComparisons) {
  ValueStats base;
  base.n = 9;
  base.median = 1000;
  base.p25 = 800;
  base.p75 = 1200;
  ValueStats v = base;
  v.median = 1300;
  const int small = suggested_rounds(base, v, 1, 3);
  v.median = 1600;
  const int large = suggested_rounds(base, v, 1, 3);
  EXPECT_GT(small, large);
  EXPECT_GE(large, 4);  // more than the 3 rounds run
  v.median = 1300;
  EXPECT_GT(suggested_rounds(base, v, 20, 3), suggested_rounds(base, v, 1, 3));
  EXPECT_LT(suggested_rounds(base, v, 20, 3), 100);
}

}  // namespace
}  // namespace cp::tune
