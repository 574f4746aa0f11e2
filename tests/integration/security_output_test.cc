// What chokepoint prints cannot be turned against the terminal that shows it
// (remote strings with control characters come out escaped, each on its own
// line), and what `diagnose --dry-run` cannot run is refused as a config
// error (exit 1) before anything is stored.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support.h"

namespace cp::itest {
namespace {

// Bytes a terminal acts on: every C0 control but the newline, and DEL.
bool has_control(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  }
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

// A local run whose stored hostname, process name and error texts are what a
// hostile agent would send (an ESC sequence, a newline and a fake report line
// in each): `show`, `history` and `compare` print them escaped, and no line
// of theirs starts with the fake text.
TEST(SecurityControlChars, RemoteStringsReachTheTerminalEscaped) {
  TempDir t;
  const std::string db = t.file("runs.db");
  for (const char* label : {"a", "b"}) {
    RunResult r = diagnose_locally(
        t, "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 200ms\ncount = 2\n", db,
        {"--label", label});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // What follows each ESC clears the screen, sets the title, or forges a line.
  const std::string evil =
      "'x'||char(27)||'[2J'||char(27)||']0;owned'||char(7)||char(10)||"
      "'FAKE verdict: all fine'||char(13)";
  exec_sql(db, "UPDATE hosts SET facts_json = json_set(facts_json, '$.hostname', " + evil +
                   ", '$.kernel', " + evil +
                   ");"
                   "UPDATE stages SET status = 'failed', error = " +
                   evil +
                   " WHERE id = (SELECT min(id) FROM stages);"
                   "UPDATE runs SET error = " +
                   evil +
                   ", label = 'lbl'||char(27)||'[8m' "
                   "WHERE id = 2;");
  const std::vector<std::vector<std::string>> commands = {{"show", "1", "--db", db},
                                                          {"show", "latest", "--db", db},
                                                          {"history", "--db", db},
                                                          {"compare", "1", "2", "--db", db}};
  for (const auto& cmd : commands) {
    const RunResult r = chokepoint(cmd, 120);
    ASSERT_EQ(r.exit_code, 0) << cmd[0] << ": " << r.err;
    EXPECT_FALSE(has_control(r.out)) << cmd[0] << ":\n" << r.out;
    EXPECT_FALSE(has_control(r.err)) << cmd[0] << ":\n" << r.err;
    for (const std::string& line : lines_of(r.out)) {
      EXPECT_FALSE(line.starts_with("FAKE")) << cmd[0] << ": " << line;
    }
  }
  // The hostname is there, escaped, in one piece.
  const RunResult show = chokepoint({"show", "1", "--db", db}, 120);
  EXPECT_NE(show.out.find("x\\x1b[2J\\x1b]0;owned\\x07\\nFAKE verdict: all fine\\r"),
            std::string::npos)
      << show.out;
  // JSON keeps the strings as they are (JSON escapes them itself).
  const RunResult j = chokepoint({"show", "1", "--db", db, "--json"}, 120);
  EXPECT_NE(j.out.find("x\\u001b[2J"), std::string::npos);
  // An error message naming what the user typed: escaped too.
  const RunResult bad = chokepoint({"show", "no\x1b[2Jsuch", "--db", db}, 120);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_FALSE(has_control(bad.err)) << bad.err;
}

// What `diagnose --dry-run` must refuse: each a config error (exit 1) before
// anything connects, nothing stored.
TEST(DryRun, RefusesInputThatCannotRun) {
  TempDir t;
  const std::string db = t.file("runs.db");
  std::string many_sizes = "[disk]\nsizes = ";
  for (int i = 0; i < 1'000'000; ++i) many_sizes += "1MB,";
  const std::string share = "[share x]\nserver_dir = /srv/x\nmedium = ram\nurl = ";
  const std::vector<std::string> plans = {
      "[link]\nnominal = 99999999999999999999999gbit\n",
      share + "smb://h/s%zz\n",
      share + "ftp://h:99999/s\n",
      "[server]\nram_dir = /tmp/../../etc\n",
      many_sizes + "\n",
  };
  for (const std::string& plan : plans) {
    write_file(t.file("plan.ini"), plan);
    const RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db",
                                    db, "--plan", t.file("plan.ini"), "--dry-run"});
    EXPECT_EQ(r.exit_code, 1) << plan.substr(0, 80) << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
  }
  for (const std::vector<std::string>& hosts :
       {std::vector<std::string>{"--server", "", "--client", "local"},
        std::vector<std::string>{"--server", "local", "--client", "  "},
        std::vector<std::string>{"--server", "nas\x1b[2J", "--client", "local"}}) {
    std::vector<std::string> args{"diagnose", "--db", db, "--dry-run"};
    args.insert(args.end(), hosts.begin(), hosts.end());
    const RunResult r = chokepoint(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
    EXPECT_FALSE(has_control(r.err)) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace cp::itest
