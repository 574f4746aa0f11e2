#include "tune_agent/apply.h"

#include "tune_agent/journal.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "tune_agent/testing/fake_sysctl_tree.h"

namespace cp::tune {
namespace {

using testing::slurp;

void spit(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// An action that runs `argv`.
Action run_action(std::vector<std::string> argv) {
  Action a;
  a.kind = "run";
  a.argv = std::move(argv);
  return a;
}

// An action that writes `content` to `path`.
Action write_action(const std::string& path, const std::string& content = "") {
  Action a;
  a.kind = "write";
  a.path = path;
  a.content = content;
  return a;
}

class JournalTest : public ::testing::Test {
 protected:
  // A change of a plain file, as the sysfs/sysctl knobs change theirs.
  Resolved change_to(const std::string& value) {
    Resolved r;
    r.target = "net.ipv4.tcp_rmem";
    r.original = "original";
    r.apply = {write_action(target_, value + "\n")};
    r.revert = {write_action(target_, "original\n")};
    return r;
  }
  const Knob& knob() { return find_knob("server.tcp_rmem"); }
  std::string journal() { return dir_ + "/tune-journal-test.json"; }
  testing::FakeSysctlTree tree_{"chokepoint-tune-test", "original\n"};
  const std::string dir_ = tree_.dir();
  const std::string target_ = tree_.tcp_rmem();  // server.tcp_rmem's file
};

TEST_F(JournalTest, JournalHoldsTheFirstOriginalAndRevertRestoresIt) {
  Journal j(journal(), dir_);
  j.apply_resolved(knob(), change_to("one"));
  EXPECT_EQ(slurp(target_), "one\n");
  // A second value keeps the first original: the session's, not the last one.
  Resolved second = change_to("two");
  second.original = "one";
  second.revert[0].content = "one\n";
  j.apply_resolved(knob(), second);
  EXPECT_EQ(slurp(target_), "two\n");
  ASSERT_EQ(j.entries().size(), 1u);
  EXPECT_EQ(j.entries()[0].original, "original");
  auto reverted = j.revert_all();
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(reverted[0].error, "");
  EXPECT_EQ(slurp(target_), "original\n");
  EXPECT_FALSE(std::filesystem::exists(journal()));
}

TEST_F(JournalTest, AKilledWritersJournalIsRevertedByTheNextStart) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Journal j(journal(), dir_);
    j.apply_resolved(knob(), change_to("tuned"));
    ::kill(getpid(), SIGKILL);  // no revert, no destructor: as a killed agent
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(slurp(target_), "tuned\n");
  Journal next(journal(), dir_);
  const StartReport report = next.revert_stale();
  EXPECT_TRUE(report.refused.empty());
  const auto& reverted = report.reverted;
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_EQ(reverted[0].knob, "server.tcp_rmem");
  EXPECT_EQ(reverted[0].error, "");
  EXPECT_EQ(slurp(target_), "original\n");
  EXPECT_FALSE(std::filesystem::exists(journal()));
  EXPECT_FALSE(next.holds_lock());
}

TEST_F(JournalTest, ALiveSessionsJournalIsLeftAlone) {
  Journal live(journal(), dir_);
  live.apply_resolved(knob(), change_to("tuned"));
  Journal other(journal(), dir_);  // another agent starting on the same host
  EXPECT_TRUE(other.revert_stale().reverted.empty());
  EXPECT_EQ(slurp(target_), "tuned\n");
  EXPECT_THROW(other.revert_all(), Error);
  EXPECT_THROW(other.apply_resolved(knob(), change_to("x")), Error);
  live.revert_all();
  EXPECT_EQ(slurp(target_), "original\n");
}

TEST_F(JournalTest, AFailedRevertStaysJournaled) {
  Journal j(journal(), dir_);
  Resolved r = change_to("tuned");
  r.revert[0].path = dir_ + "/missing-dir/x";  // cannot be written
  j.apply_resolved(knob(), r);
  auto reverted = j.revert_all();
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_NE(reverted[0].error, "");
  EXPECT_EQ(j.entries().size(), 1u);
}

// netatalk's afp.conf with a restart hook that is a real command (Debian 12
// has no netatalk, so no afpd runs here): the knob sets the parameter in
// [Global], restarts, and the revert gives the file back byte for byte and
// restarts again.
TEST_F(JournalTest, AfpKnobEditsGlobalRestartsAndRevertsByteIdentical) {
  const std::string conf = dir_ + "/afp.conf";
  const std::string text =
      "; netatalk 3\n[Global]\n  log file = /var/log/afpd.log\n\n[Homes]\nbasedir regex = /home\n";
  spit(conf, text);
  Where w;
  w.afp_conf = conf;
  w.afp_restart = "echo restarted >> " + dir_ + "/restarts";
  Journal j(journal(), dir_);
  Resolved r = j.apply(find_knob("netatalk.server_quantum"), "262144", w);
  EXPECT_EQ(r.target, conf);
  EXPECT_EQ(r.original, "1048576");  // netatalk's default: the file does not set it
  std::string now;
  set_afp_param(slurp(conf), "server quantum", "x", &now);
  EXPECT_EQ(now, "262144");
  EXPECT_EQ(slurp(dir_ + "/restarts"), "restarted\n");
  // dsireadbuf beside it, then everything back.
  j.apply(find_knob("netatalk.dsireadbuf"), "6", w);
  set_afp_param(slurp(conf), "dsireadbuf", "x", &now);
  EXPECT_EQ(now, "6");
  auto reverted = j.revert_all();
  ASSERT_EQ(reverted.size(), 2u);
  for (const auto& x : reverted) EXPECT_EQ(x.error, "") << x.knob;
  EXPECT_EQ(slurp(conf), text);
  // Restarted after each apply and each revert.
  EXPECT_EQ(slurp(dir_ + "/restarts"), "restarted\nrestarted\nrestarted\nrestarted\n");
}

TEST_F(JournalTest, AfpKnobWithoutAConfOrRestartIsRefused) {
  Where w;
  w.afp_conf = dir_ + "/no-such-afp.conf";
  w.afp_restart = "true";
  try {
    resolve(find_knob("netatalk.dsireadbuf"), "6", w);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
}

TEST(AfpConf, ReplacesInGlobalOrAddsItLast) {
  std::string was;
  EXPECT_EQ(set_afp_param("[Global]\nServer Quantum = 1M\n[Vol]\npath = /x\n", "server quantum",
                          "65536", &was),
            "[Global]\nserver quantum = 65536\n[Vol]\npath = /x\n");
  EXPECT_EQ(was, "1M");
  EXPECT_EQ(set_afp_param("[Global]\na = b\n\n[Vol]\n", "dsireadbuf", "6", &was),
            "[Global]\na = b\ndsireadbuf = 6\n\n[Vol]\n");
  EXPECT_EQ(was, "");
  EXPECT_EQ(set_afp_param("[Vol]\npath = /x\n", "dsireadbuf", "6", &was),
            "[Global]\ndsireadbuf = 6\n[Vol]\npath = /x\n");
  // A volume's parameter of the same name is not the global one.
  EXPECT_EQ(set_afp_param("[Global]\n[Vol]\ndsireadbuf = 3\n", "dsireadbuf", "6", &was),
            "[Global]\ndsireadbuf = 6\n[Vol]\ndsireadbuf = 3\n");
}

TEST(SambaDropin, KeepsOtherKnobsLinesAndReplacesItsOwn) {
  std::string d = merge_samba_dropin("", "smb2 max read", "65536");
  d = merge_samba_dropin(d, "aio read size", "1");
  d = merge_samba_dropin(d, "smb2 max read", "8388608");
  EXPECT_EQ(d,
            "# written by chokepoint tune; removed when it reverts\n[global]\n"
            "\tsmb2 max read = 8388608\n\taio read size = 1\n");
  // A file chokepoint did not write is not merged from.
  EXPECT_EQ(merge_samba_dropin("[global]\nfoo = bar\n", "max xmit", "4096"),
            "# written by chokepoint tune; removed when it reverts\n[global]\n"
            "\tmax xmit = 4096\n");
}

TEST(Privilege, SudoersLineNamesProgramsByPathAndTeeWithItsFile) {
  const Action run = run_action({"blockdev", "--setra", "256", "/dev/loop3"});
  const Action write = write_action("/sys/block/loop3/queue/scheduler");
  const Action sysctl = write_action("/proc/sys/net/ipv4/tcp_rmem");
  const std::string line = sudoers_line("cp", {run, write, run, sysctl});
  const std::string blockdev =
      std::filesystem::exists("/usr/sbin/blockdev") ? "/usr/sbin/blockdev" : "/sbin/blockdev";
  // Whole commands with their arguments: this readahead on this disk only.
  EXPECT_EQ(line, "cp ALL=(root) NOPASSWD: " + blockdev +
                      " --setra 256 /dev/loop3, /usr/bin/tee /sys/block/loop3/queue/scheduler, "
                      "/usr/bin/tee /proc/sys/net/ipv4/tcp_rmem");
}

TEST(Privilege, WrapperOperationsCoverTheTablesHostCommandsOnly) {
  const Action ra = run_action({"blockdev", "--setra", "256", "/dev/loop3"});
  EXPECT_EQ(wrapper_operation(ra), (std::vector<std::string>{"setra", "256", "/dev/loop3"}));
  const Action q = write_action("/sys/block/loop3/queue/scheduler", "mq-deadline\n");
  EXPECT_EQ(wrapper_operation(q),
            (std::vector<std::string>{"queue", "loop3", "scheduler", "mq-deadline"}));
  Action sc = q;
  sc.path = "/proc/sys/net/ipv4/tcp_rmem";
  sc.content = "4096 131072 6291456\n";
  EXPECT_EQ(wrapper_operation(sc),
            (std::vector<std::string>{"sysctl", "net.ipv4.tcp_rmem", "4096 131072 6291456"}));
  // smb.conf and whole programs have no operation: no sudo rule stands for them.
  Action conf = q;
  conf.path = "/etc/samba/smb.conf";
  EXPECT_TRUE(wrapper_operation(conf).empty());
  const Action sh = run_action({"sh", "-c", "systemctl restart netatalk"});
  EXPECT_TRUE(wrapper_operation(sh).empty());
}

// Not root and no sudo rule: refused before anything changes (the lab test
// covers the sudo rule). The check runs in a child that drops to nobody.
TEST_F(JournalTest, WithoutRootOrASudoRuleAKnobIsRefusedBeforeItChanges) {
  if (::geteuid() != 0) {
    // Already unprivileged: the same check, in this process.
    EXPECT_THROW(check_privilege(find_knob("server.tcp_rmem"), change_to("x").apply), Error);
    return;
  }
  // Its own journal directory (the journal's checks refuse anyone else's).
  const std::string own = dir_ + "/nobody";
  std::filesystem::create_directories(own);
  ASSERT_EQ(::chown(own.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(own.c_str(), 0700), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(3);
    try {
      Journal j(own + "/nobody-journal.json", dir_);
      j.apply_resolved(find_knob("server.tcp_rmem"), change_to("x"));
      _exit(0);
    } catch (const Error& e) {
      _exit(e.kind() == ErrorKind::kUnsupported ? 1 : 2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(slurp(target_), "original\n");
  EXPECT_FALSE(std::filesystem::exists(own + "/nobody-journal.json"));
}

TEST(SambaInclude, GoesLastInGlobalBeforeTheNextSection) {
  const std::string conf =
      "# comment\n[global]\n\tworkgroup = X\n\tsmb2 max read = 1\n\n[share]\n\tpath = /x\n";
  EXPECT_EQ(add_samba_include(conf, "/etc/samba/chokepoint-tune.conf"),
            "# comment\n[global]\n\tworkgroup = X\n\tsmb2 max read = 1\n"
            "\tinclude = /etc/samba/chokepoint-tune.conf\n\n[share]\n\tpath = /x\n");
}

TEST(SambaInclude, AddsGlobalWhenMissingAndIsIdempotent) {
  const std::string conf = "[share]\npath = /x\n";
  const std::string once = add_samba_include(conf, "/d.conf");
  EXPECT_EQ(once, "[global]\n\tinclude = /d.conf\n[share]\npath = /x\n");
  EXPECT_EQ(add_samba_include(once, "/d.conf"), once);
  EXPECT_EQ(add_samba_include("[Global]\n", "/d.conf"), "[Global]\n\tinclude = /d.conf\n");
}

TEST(WriteCache, RefusedOnALoopDiskWithTheReason) {
  // /var/tmp may be on any disk; a loop device is made for the refusal.
  const std::string img = "/var/tmp/chokepoint-tune-wc-" + std::to_string(getpid()) + ".img";
  const std::string mnt = img + ".mnt";
  std::filesystem::create_directories(mnt);
  ASSERT_EQ(std::system(("truncate -s 64M " + img + " && mkfs.ext4 -q -F " + img +
                         " && mount -o loop " + img + " " + mnt)
                            .c_str()),
            0);
  try {
    resolve(find_knob("server.write_cache"), "0", {mnt, ""});
    ADD_FAILURE() << "a loop disk's write cache was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  EXPECT_EQ(std::system(("umount " + mnt).c_str()), 0);
  std::filesystem::remove_all(mnt);
  std::filesystem::remove(img);
}

TEST(Readahead, TmpfsDirectoryIsRefused) {
  try {
    resolve(find_knob("server.readahead"), "131072", {"/dev/shm", ""});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace cp::tune
