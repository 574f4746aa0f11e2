// chokepoint(1) and the bash completion, generated from the command table:
// every command and option --help shows is in the man page, and bash
// (the completion file sourced, as bash-completion does) offers the
// commands, the knob names and the stored run labels.
#include "app/generate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "app/command_table.h"
#include "core/testing/scratch_dir.h"
#include "core/text.h"
#include "report/test_runs.h"
#include "store/store.h"
#include "tune_agent/knobs.h"

namespace cp::app {
namespace {

namespace fs = std::filesystem;

std::string help_of(const Command& c) {
  ::testing::internal::CaptureStdout();
  const int rc = c.run({"--help"});
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0) << c.name;
  return out;
}

// Every `--name` in a text.
std::set<std::string> long_options(const std::string& text) {
  static const std::regex opt("--([a-z][a-z0-9-]*)");
  std::set<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), opt), e; it != e; ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(ManPage, ListsEveryCommandAndEveryOptionOfItsHelp) {
  const std::string man = man_page();
  size_t options = 0;
  for (const Command& c : command_table()) {
    EXPECT_NE(man.find(std::string(".SS \"chokepoint ") + c.name), std::string::npos) << c.name;
    for (const std::string& o : long_options(help_of(c))) {
      // In roff every '-' is "\-" (so options copy and paste as typed).
      std::string escaped = "\\-\\-";
      for (char ch : o) escaped += ch == '-' ? std::string("\\-") : std::string(1, ch);
      EXPECT_NE(man.find(escaped), std::string::npos) << c.name << " --" << o;
      ++options;
    }
  }
  EXPECT_GT(options, 50u);  // the commands' --help really were read
  for (const char* section : {".SH EXIT STATUS", ".SH FILES", ".SH ENVIRONMENT", ".SH EXAMPLES"}) {
    EXPECT_NE(man.find(std::string("\n") + section + "\n"), std::string::npos) << section;
  }
}

class Completion : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_ + "/chokepoint.bash") << bash_completion(); }

  // What bash's completion function, the one `complete -p chokepoint` names
  // after -F, puts in COMPREPLY for the words (the last one being completed).
  std::set<std::string> complete(const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    // chokepoint (for the labels' `chokepoint history`) is beside this test.
    const std::string bin = fs::read_symlink("/proc/self/exe").parent_path().string();
    const std::string script = "PATH='" + bin + "':$PATH\nsource '" + dir_ +
                               "/chokepoint.bash'\n"
                               "spec=$(complete -p chokepoint) || exit 3\n"
                               "fn=${spec#*-F }; fn=${fn%% *}\n"
                               "COMP_WORDS=(" +
                               array +
                               ")\n"
                               "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                               "\"$fn\" chokepoint \"${COMP_WORDS[COMP_CWORD]}\" "
                               "\"${COMP_WORDS[COMP_CWORD - 1]}\"\n"
                               "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    std::ofstream(dir_ + "/run.sh") << script;
    FILE* p = popen(("bash --norc --noprofile '" + dir_ + "/run.sh'").c_str(), "r");
    EXPECT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = p ? pclose(p) : -1;
    EXPECT_EQ(status, 0) << out;
    std::set<std::string> got;
    for (std::string_view l : split(out, '\n')) {
      if (!l.empty()) got.emplace(l);
    }
    return got;
  }
  const cp::testing::ScratchDir scratch_{"cp-completion"};
  const std::string dir_ = scratch_.path().string();
};

TEST_F(Completion, TabAfterChokepointGivesEveryCommand) {
  std::set<std::string> want{"--help", "--version"};
  for (const Command& c : command_table()) want.insert(c.name);
  EXPECT_EQ(complete({"chokepoint", ""}), want);
  EXPECT_EQ(complete({"chokepoint", "d"}), (std::set<std::string>{"diagnose", "drivers"}));
}

TEST_F(Completion, TabAfterTuneKnobGivesEveryKnobName) {
  std::set<std::string> want, samba;
  for (const tune::Knob& k : tune::knob_table()) {
    want.insert(k.name);
    if (k.name.starts_with("samba.")) samba.insert(k.name);
  }
  ASSERT_FALSE(samba.empty());
  EXPECT_EQ(complete({"chokepoint", "tune", "--knob", ""}), want);
  EXPECT_EQ(complete({"chokepoint", "tune", "--lab", "--knob", "samba."}), samba);
}

TEST_F(Completion, TabAfterLabGivesItsSubcommandsAndAfterADashTheOptions) {
  EXPECT_EQ(complete({"chokepoint", "lab", ""}),
            (std::set<std::string>{"up", "status", "throttle", "down"}));
  EXPECT_EQ(complete({"chokepoint", "diagnose", "--dry"}), (std::set<std::string>{"--dry-run"}));
}

TEST_F(Completion, TabAfterShowGivesTheStoredRunLabels) {
  const std::string db = dir_ + "/runs.db";
  {
    Store store(db);
    for (const char* label : {"before", "after tuning"}) {
      const RunRecord run = report::testing::SeedRun(0, label).build();
      store.end_run(store.begin_run(run), kComplete);
    }
  }
  EXPECT_EQ(complete({"chokepoint", "show", "--db", db, ""}),
            (std::set<std::string>{"latest", "before", "after\\ tuning"}));
  EXPECT_EQ(complete({"chokepoint", "history", "--db", db, "--label", "be"}),
            (std::set<std::string>{"before"}));
}

}  // namespace
}  // namespace cp::app
