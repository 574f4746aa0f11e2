#include "core/text.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>

#include <unistd.h>

#include "core/model.h"

namespace cp {
namespace {

using Views = std::vector<std::string_view>;

TEST(Text, TrimDropsSurroundingWhitespaceOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
}

TEST(Text, SplitKeepsEmptyPieces) {
  EXPECT_EQ(split("a,,b", ','), (Views{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (Views{""}));
  EXPECT_EQ(split("a,", ','), (Views{"a", ""}));
}

TEST(Text, SplitWsDropsRuns) {
  EXPECT_EQ(split_ws("  cpu  1 2\n"), (Views{"cpu", "1", "2"}));
  EXPECT_TRUE(split_ws(" \n").empty());
}

TEST(Text, SqueezeWsMakesEachRunOneSpaceAndTrims) {
  EXPECT_EQ(squeeze_ws(" a\t\tb  c\n"), "a b c");
  EXPECT_EQ(squeeze_ws("include = /etc/x.conf"), "include = /etc/x.conf");
  EXPECT_EQ(squeeze_ws(" \n"), "");
}

TEST(Text, LowerJoinAndYesNo) {
  EXPECT_EQ(lower("SMB3_11 Global"), "smb3_11 global");
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(parse_yes_no("on"), true);
  EXPECT_EQ(parse_yes_no("0"), false);
  EXPECT_EQ(parse_yes_no("Yes"), std::nullopt);
  EXPECT_EQ(parse_yes_no(""), std::nullopt);
}

TEST(Text, ReadFileReadsWholeFilesAndProcFiles) {
  char dir[] = "/tmp/cp_text_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/f";
  std::string big(100000, 'x');
  big[99999] = 'y';
  std::ofstream(path) << big;
  EXPECT_EQ(read_file(path), big);
  // /proc files report a size of 0 but have content.
  const auto self = read_file("/proc/self/stat");
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE(self->empty());
  EXPECT_EQ(read_file(std::string(dir) + "/missing"), std::nullopt);
  EXPECT_EQ(read_file(dir), std::nullopt);  // a directory cannot be read
  unlink(path.c_str());
  rmdir(dir);
}

// Nothing a terminal acts on is left: the C0 controls (ESC above all), DEL,
// the C1 controls in UTF-8 (U+009B is CSI to some terminals), bidi overrides
// and bytes that are not UTF-8. Printable text, UTF-8 letters and
// backslashes are kept as they are.
TEST(SecurityControlChars, FieldEscapesEveryControlCharacter) {
  EXPECT_EQ(sanitize_field("nas\x1b[2J\x1b]0;owned\x07"), "nas\\x1b[2J\\x1b]0;owned\\x07");
  EXPECT_EQ(sanitize_field("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(sanitize_field(std::string("x\0y\x7f", 4)), "x\\x00y\\x7f");
  EXPECT_EQ(sanitize_field("\xc2\x9b"
                           "31m"),
            "\\u009b31m");                                                   // C1 CSI in UTF-8
  EXPECT_EQ(sanitize_field("abc\xe2\x80\xaetxt.exe"), "abc\\u202etxt.exe");  // RLO
  EXPECT_EQ(sanitize_field("\x9b"
                           "1m \xff \xc3"),
            "\\x9b1m \\xff \\xc3");                              // not UTF-8
  EXPECT_EQ(sanitize_field("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(sanitize_field("\xc0\xaf"), "\\xc0\\xaf");           // an overlong '/'
  EXPECT_EQ(sanitize_field("caf\xc3\xa9 \xf0\x9f\x93\x81 C:\\share"),
            "caf\xc3\xa9 \xf0\x9f\x93\x81 C:\\share");
  EXPECT_EQ(sanitize_field("smbd"), "smbd");
}

TEST(SecurityControlChars, TextKeepsItsLinesOnly) {
  EXPECT_EQ(sanitize_text("error: \x1b[31mbad\x1b[0m\n  fix: retry\r"),
            "error: \\x1b[31mbad\\x1b[0m\n  fix: retry\\r");
}

bool has_control(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// What a text report renders from: every string of the run, those inside its
// JSON columns too, escaped; the numbers and the JSON's shape unchanged.
TEST(SecurityControlChars, SanitizedRunEscapesEveryRemoteString) {
  namespace json = boost::json;
  RunRecord run;
  run.label = "nightly\x1b[8m";
  run.error = "agent said: \x1b[2Jgone\nfix: nothing";
  run.hosts.push_back({"server", "nas", R"({"hostname":"nas\u001b]0;x\u0007","cpu_cores":4})"});
  StageRecord st;
  st.layer = "smb";
  st.error = "line1\nline2";
  st.params_json = R"({"share":"s\r","sizes":[1,2]})";
  SampleRecord sa;
  sa.bytes = 100;
  sa.error = "\x1b[1Aover";
  sa.details_json = R"({"properties":{"max_read_size":-5},"note\n":"ok"})";
  sa.cpu_json = R"({"server":{"top":[{"comm":"smbd\n[fake] line","cpu_pct":97.5}]}})";
  sa.seconds = 0.5;
  st.samples.push_back(sa);
  run.stages.push_back(st);

  const RunRecord safe = sanitized_run(run);
  for (const std::string* s :
       {&safe.label, &safe.error, &safe.hosts[0].facts_json, &safe.stages[0].error,
        &safe.stages[0].params_json, &safe.stages[0].samples[0].error,
        &safe.stages[0].samples[0].details_json, &safe.stages[0].samples[0].cpu_json}) {
    EXPECT_FALSE(has_control(*s)) << *s;
  }
  EXPECT_EQ(safe.label, "nightly\\x1b[8m");
  const json::object facts = json::parse(safe.hosts[0].facts_json).as_object();
  EXPECT_EQ(facts.at("hostname").as_string(), "nas\\x1b]0;x\\x07");
  EXPECT_EQ(facts.at("cpu_cores").as_int64(), 4);
  const json::value cpu = json::parse(safe.stages[0].samples[0].cpu_json);
  EXPECT_EQ(cpu.at("server").at("top").at(0).at("comm").as_string(), "smbd\\n[fake] line");
  EXPECT_EQ(cpu.at("server").at("top").at(0).at("cpu_pct").as_double(), 97.5);
  const json::value details = json::parse(safe.stages[0].samples[0].details_json);
  EXPECT_EQ(details.at("properties").at("max_read_size").as_int64(), -5);
  EXPECT_TRUE(details.as_object().contains("note\\n"));
  EXPECT_EQ(safe.stages[0].samples[0].bytes, 100u);
  EXPECT_EQ(safe.stages[0].samples[0].seconds, 0.5);
  // A column that is not JSON is left as it is (nothing parses it to show it).
  run.hosts[0].facts_json = "not json";
  EXPECT_EQ(sanitized_run(run).hosts[0].facts_json, "not json");
}

TEST(Text, ParseNumberTakesTheWholeText) {
  EXPECT_EQ(parse_int("42"), 42);
  EXPECT_EQ(parse_int("-3"), -3);
  EXPECT_EQ(parse_int(" 7"), 7);  // as std::stoi
  EXPECT_EQ(parse_int("7x"), std::nullopt);
  EXPECT_EQ(parse_int(""), std::nullopt);
  EXPECT_EQ(parse_int("99999999999"), std::nullopt);
  EXPECT_EQ(parse_double("2.5"), 2.5);
  EXPECT_EQ(parse_double("1e3"), 1000.0);
  EXPECT_EQ(parse_double("2.5%"), std::nullopt);
  EXPECT_EQ(parse_double("%"), std::nullopt);
}

}  // namespace
}  // namespace cp
