// The tune journal as an attacker plants it: each refused with its typed
// reason, nothing of it run (a marker file the planted action would create
// stays absent), the file left as found.
#include "tune_agent/journal.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "tune_agent/detail.h"
#include "tune_agent/testing/fake_sysctl_tree.h"

namespace cp::tune {
namespace {

using testing::slurp;

class SecurityJournal : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ + "/state");
    ::chmod((dir_ + "/state").c_str(), 0700);
  }
  std::string path() const { return dir_ + "/state/tune-journal-test.json"; }
  // A journal of one entry, written as `mode`.
  void plant(const std::string& entry, mode_t mode = 0600) {
    std::ofstream(path()) << R"({"version":1,"host":"h","pid":1,"entries":[)" << entry << "]}\n";
    ASSERT_EQ(::chmod(path().c_str(), mode), 0);
  }
  // server.tcp_rmem restored the way the knob does it, in the fake tree.
  std::string good_entry() const {
    return fmt::format(
        R"({{"knob":"server.tcp_rmem","target":"net.ipv4.tcp_rmem","original":"4096 1 2",)"
        R"("revert":[{{"kind":"write","path":"{}","content":"4096 1 2\n"}}]}})",
        sysctl_);
  }
  StartReport start() {
    Journal j(path(), dir_);
    return j.revert_stale();
  }
  // Whether starting over the planted journal refuses it once, for `reason`.
  ::testing::AssertionResult refused_once(Refusal reason) {
    const StartReport r = start();
    if (r.refused.size() != 1u)
      return ::testing::AssertionFailure() << r.refused.size() << " refused";
    if (r.refused[0].reason != reason)
      return ::testing::AssertionFailure() << "refused for " << to_string(r.refused[0].reason);
    return ::testing::AssertionSuccess();
  }
  testing::FakeSysctlTree tree_{"chokepoint-journal-test", "tuned\n"};
  const std::string dir_ = tree_.dir();
  const std::string marker_ = dir_ + "/marker";
  const std::string sysctl_ = tree_.tcp_rmem();
};

TEST_F(SecurityJournal, APlantedRunActionIsRefusedAndNeverRun) {
  plant(fmt::format(R"({{"knob":"server.tcp_rmem","target":"net.ipv4.tcp_rmem","original":"x",)"
                    R"("revert":[{{"kind":"run","argv":["touch","{}"]}}]}})",
                    marker_));
  const StartReport r = start();
  EXPECT_TRUE(r.reverted.empty());
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].reason, Refusal::kActionShape);
  EXPECT_EQ(r.refused[0].knob, "server.tcp_rmem");
  EXPECT_FALSE(std::filesystem::exists(marker_));
  // Kept in the journal for a person to look at; a new session refuses to start over it.
  EXPECT_TRUE(std::filesystem::exists(path()));
  Journal j(path(), dir_);
  Resolved res;
  res.target = "net.ipv4.tcp_rmem";
  try {
    j.apply_resolved(find_knob("server.tcp_rmem"), res);
    FAIL() << "applied over a refused journal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

TEST_F(SecurityJournal, AWholeProgramUnderAKnobOfAnotherShapeIsRefused) {
  // readahead restores with blockdev only: `sh -c` is no shape of it.
  plant(fmt::format(R"({{"knob":"server.readahead","target":"/dev/loop0","original":"x",)"
                    R"("revert":[{{"kind":"run","argv":["sh","-c","touch {}"]}}]}})",
                    marker_));
  ASSERT_TRUE(refused_once(Refusal::kActionShape));
  EXPECT_FALSE(std::filesystem::exists(marker_));
}

TEST_F(SecurityJournal, AWriteOutsideTheKnobTableIsRefused) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep\n";
  plant(fmt::format(R"({{"knob":"server.tcp_rmem","target":"net.ipv4.tcp_rmem","original":"x",)"
                    R"("revert":[{{"kind":"write","path":"{}","content":"owned\n"}}]}})",
                    victim));
  ASSERT_TRUE(refused_once(Refusal::kActionShape));
  EXPECT_EQ(slurp(victim), "keep\n");
}

TEST_F(SecurityJournal, AnUnknownKnobIsRefused) {
  plant(fmt::format(R"({{"knob":"evil.knob","target":"x","original":"x",)"
                    R"("revert":[{{"kind":"run","argv":["touch","{}"]}}]}})",
                    marker_));
  ASSERT_TRUE(refused_once(Refusal::kUnknownKnob));
  EXPECT_FALSE(std::filesystem::exists(marker_));
}

TEST_F(SecurityJournal, ASymlinkedJournalIsRefused) {
  const std::string elsewhere = dir_ + "/elsewhere.json";
  std::ofstream(elsewhere) << R"({"version":1,"entries":[)" << good_entry() << "]}\n";
  ::chmod(elsewhere.c_str(), 0600);
  std::filesystem::create_symlink(elsewhere, path());
  ASSERT_TRUE(refused_once(Refusal::kSymlink));
  EXPECT_EQ(slurp(sysctl_), "tuned\n");  // its entry was not run
  EXPECT_TRUE(std::filesystem::is_symlink(path()));
}

TEST_F(SecurityJournal, AJournalOthersMayReadIsRefused) {
  plant(good_entry(), 0644);
  ASSERT_TRUE(refused_once(Refusal::kMode));
  EXPECT_EQ(slurp(sysctl_), "tuned\n");
}

TEST_F(SecurityJournal, AnotherUsersJournalIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  plant(good_entry());
  ASSERT_EQ(::chown(path().c_str(), 65534, 65534), 0);
  ASSERT_TRUE(refused_once(Refusal::kNotOwner));
  EXPECT_EQ(slurp(sysctl_), "tuned\n");
}

TEST_F(SecurityJournal, AnOversizedJournalIsRefusedUnread) {
  {
    std::ofstream out(path());
    out << R"({"version":1,"entries":[)" << good_entry() << "]}";
    out << std::string(kMaxJournalBytes, ' ');
  }
  ::chmod(path().c_str(), 0600);
  ASSERT_TRUE(refused_once(Refusal::kTooLarge));
  EXPECT_EQ(slurp(sysctl_), "tuned\n");
}

TEST_F(SecurityJournal, AFifoJournalIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path().c_str(), 0600), 0);
  const StartReport r = start();
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].reason, Refusal::kNotRegular);
}

TEST_F(SecurityJournal, MalformedJsonIsRefused) {
  std::ofstream(path()) << R"({"entries":[{"knob":1}]})";
  ::chmod(path().c_str(), 0600);
  const StartReport r = start();
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].reason, Refusal::kMalformed);
}

// The control: an entry of the knob's own shape is reverted, and a refused
// one beside it stays journaled, alone.
TEST_F(SecurityJournal, AnEntryOfTheKnobsShapeIsRevertedBesideARefusedOne) {
  plant(good_entry() + "," +
        fmt::format(R"({{"knob":"server.tcp_rmem","target":"net.ipv4.tcp_rmem","original":"x",)"
                    R"("revert":[{{"kind":"run","argv":["touch","{}"]}}]}})",
                    marker_));
  const StartReport r = start();
  ASSERT_EQ(r.reverted.size(), 1u);
  EXPECT_EQ(r.reverted[0].error, "");
  EXPECT_EQ(slurp(sysctl_), "4096 1 2\n");
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(marker_));
  // Only the refused entry is left, in a 0600 file.
  Journal again(path(), dir_);
  EXPECT_TRUE(again.entries().empty());
  struct stat st {};
  ASSERT_EQ(::stat(path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(again.revert_stale().refused.size(), 1u);
}

TEST_F(SecurityJournal, EveryKnobMechanismsOwnRevertPassesTheCheck) {
  JournalEntry ra{"server.readahead",
                  "/dev/loop3",
                  "131072",
                  {Action{"run", {"blockdev", "--setra", "256", "/dev/loop3"}, "", "", "", true}}};
  EXPECT_FALSE(check_entry(ra).has_value());
  JournalEntry mtu{"link.mtu",
                   "cpd-s",
                   "1500",
                   {Action{"run", {"ip", "link", "set", "dev", "cpd-s", "mtu", "1500"}}}};
  EXPECT_FALSE(check_entry(mtu).has_value());
  const std::string conf = "/etc/samba/smb.conf";
  JournalEntry smb{"samba.smb2_max_read",
                   conf,
                   "8388608",
                   {Action{"write", {}, conf, "[global]\n"},
                    Action{"remove", {}, "/etc/samba/chokepoint-tune.conf"},
                    Action{"run", {"smbcontrol", "-s", conf, "smbd", "reload-config"}}}};
  EXPECT_FALSE(check_entry(smb).has_value());
  // The same entry aimed at another file's drop-in, or with another reload: refused.
  JournalEntry moved = smb;
  moved.revert[1].path = "/root/.ssh/authorized_keys";
  EXPECT_EQ(check_entry(moved)->reason, Refusal::kActionShape);
  JournalEntry dotdot = smb;
  dotdot.target = dotdot.revert[0].path = "/etc/samba/../shadow";
  EXPECT_EQ(check_entry(dotdot)->reason, Refusal::kActionShape);
  // A readahead on a path that is no device.
  JournalEntry ra2 = ra;
  ra2.target = ra2.revert[0].argv[3] = "/dev/../etc/passwd";
  EXPECT_EQ(check_entry(ra2)->reason, Refusal::kActionShape);
}

TEST_F(SecurityJournal, AWorldWritableStateDirIsRefused) {
  ::chmod((dir_ + "/state").c_str(), 0777);
  plant(good_entry());
  try {
    start();
    FAIL() << "used a world-writable directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  EXPECT_EQ(slurp(sysctl_), "tuned\n");
}

TEST(SecurityJournalDir, WithoutHomeItIsNeverUnderTmp) {
  const auto save = [](const char* n) {
    const char* v = std::getenv(n);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto home = save("HOME"), xdg = save("XDG_STATE_HOME"),
             over = save("CHOKEPOINT_TUNE_STATE_DIR");
  ::unsetenv("HOME");
  ::unsetenv("XDG_STATE_HOME");
  ::unsetenv("CHOKEPOINT_TUNE_STATE_DIR");
  std::string dir, error;
  try {
    dir = journal_dir();
  } catch (const Error& e) {
    error = e.what();
  }
  if (home) ::setenv("HOME", home->c_str(), 1);
  if (xdg) ::setenv("XDG_STATE_HOME", xdg->c_str(), 1);
  if (over) ::setenv("CHOKEPOINT_TUNE_STATE_DIR", over->c_str(), 1);
  if (error.empty()) {
    const passwd* pw = ::getpwuid(::geteuid());
    ASSERT_NE(pw, nullptr);
    EXPECT_EQ(dir, std::string(pw->pw_dir) + "/.local/state/chokepoint");
  }
  EXPECT_NE(dir.rfind("/tmp", 0), 0u);
}

TEST_F(SecurityJournal, KnobWritesDoNotFollowSymlinks) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep\n";
  const std::string link = dir_ + "/link";
  std::filesystem::create_symlink(victim, link);
  EXPECT_THROW(detail::write_file(link, "owned\n"), Error);
  EXPECT_EQ(slurp(victim), "keep\n");
  if (::geteuid() == 0) {
    // Root writes no other user's file (a user's smb.conf behind a fake smbd).
    ASSERT_EQ(::chown(victim.c_str(), 65534, 65534), 0);
    EXPECT_THROW(detail::write_file(victim, "owned\n"), Error);
    EXPECT_EQ(slurp(victim), "keep\n");
  }
}

}  // namespace
}  // namespace cp::tune
