// The agent on a shared server, tried as another local user would: links,
// FIFOs and forged owner records planted in its run directories and in the
// directories its orphan cleanup scans (a temp dir plays the shared one). What must hold: no
// file outside the run directory changes (checksums of the planted targets),
// the request fails with a typed error, the cleanup leaves what is not its own
// alone and says so (RunDirEntry::refused), and a worker stuck on a FIFO does
// not keep the agent from exiting on SIGTERM.
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent_server/agent.h"
#include "agent_server/run_dir.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/process.h"
#include "link/agent_link.h"

namespace cp::agent {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using remote::AgentLink;
using remote::make_fd_stream;

std::string checksum_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  Checksum c;
  const std::string s = ss.str();
  c.update(s.data(), s.size());
  return c.hex();
}

// A forged owner record naming an agent that is gone (a pid that ran and ended).
std::string gone_owner_record() {
  Child gone({"true"});
  EXPECT_EQ(gone.wait(10), 0);
  std::error_code ec;
  return json::serialize(
      json::object{{"pid", gone.pid()},
                   {"start_ticks", 1},
                   {"boot_id", boot_id()},
                   {"host", host_name()},
                   {"pid_ns", fs::read_symlink("/proc/self/ns/pid", ec).string()},
                   {"run", 1}});
}

fs::path make_temp_dir(const char* what) {
  std::string tmpl = (fs::temp_directory_path() / (std::string(what) + "-XXXXXX")).string();
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

// An old directory: the orphan cleanup counts an unowned one untouched for an hour as left behind.
void age(const fs::path& p) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(2));
}

class SecurityAgentFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("agent-sec");
    outside_ = make_temp_dir("agent-sec-victim");
    victim_ = outside_ / "victim";
    std::ofstream(victim_) << "a file another user owns and the agent must not touch\n";
    victim_sum_ = checksum_of(victim_);
  }
  void TearDown() override {
    link_.reset();
    if (agent_.joinable()) agent_.join();
    if (sv_[1] >= 0) close(sv_[1]);
    fs::remove_all(dir_);
    fs::remove_all(outside_);
  }
  // An agent in this process over a socketpair; returns its shared run dir in dir_.
  std::string start_agent() {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_), 0);
    agent_ = std::thread([this] { serve(sv_[1], sv_[1], {"test-build", "0", {}}); });
    link_ = std::make_unique<AgentLink>(make_fd_stream(sv_[0], sv_[0], "test"), "test agent");
    link_->handshake(10);
    json::object p = link_->call(
        "prepare", {{"dirs", json::array{dir_.string()}}, {"shared", true}, {"run", 1}}, 10);
    return msg::decode<msg::PrepareResult>(p, "prepare").dirs.at(dir_.string());
  }
  // The kind of the error `type` fails with; ADD_FAILURE when it succeeds.
  ErrorKind fails(const std::string& type, json::object fields) {
    fields["dir"] = dir_.string();
    try {
      link_->call(type, fields, 20);
      ADD_FAILURE() << type << " succeeded on a planted file";
      return ErrorKind::kUsage;
    } catch (const Error& e) {
      return e.kind();
    }
  }

  fs::path dir_, outside_, victim_;
  std::string victim_sum_;
  int sv_[2] = {-1, -1};
  std::thread agent_;
  std::unique_ptr<AgentLink> link_;
};

// The shared run directory is sticky (01777) and its owner record was made
// before it opened: no other user can remove, rename or replace the agent's files.
TEST_F(SecurityAgentFiles, SharedRunDirIsStickyWithTheAgentsOwnerRecord) {
  const std::string run = start_agent();
  struct stat st {};
  ASSERT_EQ(lstat(run.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  EXPECT_EQ(st.st_uid, geteuid());
  ASSERT_EQ(lstat((run + "/" + kOwnerFile).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_uid, geteuid());
}

// A link planted at the names the run will write or read: each request fails
// with an I/O error, and the link's target keeps its bytes; remove_file
// removes the link only.
TEST_F(SecurityAgentFiles, PlantedLinkAtAFileNameFailsTypedAndLeavesItsTarget) {
  const std::string run = start_agent();
  for (const char* name : {"make.dat", "info.dat", "disk-w.dat", "disk-r.dat", "gone.dat"}) {
    fs::create_symlink(victim_, fs::path(run) / name);
  }
  EXPECT_EQ(fails("make_file", {{"name", "make.dat"}, {"size", 4096}}), ErrorKind::kIo);
  EXPECT_EQ(fails("file_info", {{"name", "info.dat"}}), ErrorKind::kIo);
  EXPECT_EQ(fails("disk", {{"op", "write"}, {"name", "disk-w.dat"}, {"size", 4096}}),
            ErrorKind::kIo);
  EXPECT_EQ(fails("disk", {{"op", "read"}, {"name", "disk-r.dat"}}), ErrorKind::kIo);
  json::object rm = link_->call("remove_file", {{"dir", dir_.string()}, {"name", "gone.dat"}}, 10);
  EXPECT_TRUE(msg::decode<msg::RemoveFileResult>(rm, "remove_file").removed);
  EXPECT_FALSE(fs::is_symlink(fs::path(run) / "gone.dat"));
  EXPECT_EQ(checksum_of(victim_), victim_sum_);
  EXPECT_TRUE(fs::exists(victim_));
}

// A link (to a directory outside) planted at the name of a small-file pass's
// root in the shared run directory: the pass fails with an I/O error, writes
// nothing through it, and leaves the link (not the agent's) where it is.
TEST_F(SecurityAgentFiles, PlantedLinkAtTheSmallFilePassRootFailsTypedAndLeavesItsTarget) {
  const std::string run = start_agent();
  fs::create_symlink(outside_, fs::path(run) / "files-server-1");
  EXPECT_EQ(
      fails("files", {{"name", "files-server-1"}, {"count", 20}, {"size", 4096}, {"dirs", 2}}),
      ErrorKind::kIo);
  EXPECT_TRUE(fs::is_symlink(fs::path(run) / "files-server-1"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(outside_)) ++entries;
  EXPECT_EQ(entries, 1);  // the victim alone: no d0000, no f000000
  EXPECT_EQ(checksum_of(victim_), victim_sum_);
  // The same request at a fresh name runs, and leaves nothing behind.
  json::object ok = link_->call("files",
                                {{"dir", dir_.string()},
                                 {"name", "files-server-2"},
                                 {"count", 20},
                                 {"size", 4096},
                                 {"dirs", 2}},
                                20);
  const auto r = msg::decode<msg::FilesResult>(ok, "files");
  ASSERT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.phases[0].ops, 20u);
  EXPECT_FALSE(fs::exists(fs::path(run) / "files-server-2"));
}

// A FIFO or a hard link planted at a name the server checksums: refused, and
// the FIFO never blocks the request (it would hang here without O_NONBLOCK).
TEST_F(SecurityAgentFiles, FifoOrHardLinkAtAChecksummedNameIsRefused) {
  const std::string run = start_agent();
  ASSERT_EQ(mkfifo((run + "/fifo.dat").c_str(), 0666), 0);
  EXPECT_EQ(fails("file_info", {{"name", "fifo.dat"}}), ErrorKind::kIo);
  std::error_code ec;
  fs::create_hard_link(victim_, fs::path(run) / "hard.dat", ec);  // same uid, same /tmp
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(fails("file_info", {{"name", "hard.dat"}}), ErrorKind::kIo);
  EXPECT_EQ(checksum_of(victim_), victim_sum_);
}

// The orphan cleanup's cases, on clean_orphan_run_dirs directly: each planted directory is
// kept with its refusal code and nothing in it or behind it changes.
class SecurityOrphanCleanup : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = make_temp_dir("sweep-sec");
    outside_ = make_temp_dir("sweep-sec-victim");
    std::ofstream(outside_ / "victim") << "keep me\n";
    victim_sum_ = checksum_of(outside_ / "victim");
  }
  void TearDown() override {
    fs::remove_all(base_);
    fs::remove_all(outside_);
  }
  // The cleanup's refusal for `name` ("" kept without one; "removed").
  std::string outcome(const std::string& name) {
    std::vector<msg::RunDirEntry> kept;
    const auto removed = clean_orphan_run_dirs(base_.string(), &kept);
    for (const auto& r : removed) {
      if (fs::path(r.path).filename() == name) return "removed";
    }
    for (const auto& k : kept) {
      if (fs::path(k.path).filename() == name) return k.refused.empty() ? "kept" : k.refused;
    }
    return "not listed";
  }
  fs::path base_, outside_;
  std::string victim_sum_;
};

TEST_F(SecurityOrphanCleanup, FifoOwnerRecordIsLeftAloneWithoutBlocking) {
  const fs::path d = base_ / "chokepoint-run-fifo01";
  fs::create_directory(d);
  ASSERT_EQ(mkfifo((d / kOwnerFile).c_str(), 0644), 0);
  age(d);
  EXPECT_EQ(outcome(d.filename()), refusal::kRecordNotRegular);
  EXPECT_TRUE(fs::exists(d / kOwnerFile));
}

// A record linked to /dev/zero is never read: memory does not grow by it.
TEST_F(SecurityOrphanCleanup, OwnerRecordLinkedToDevZeroIsNotRead) {
  const fs::path d = base_ / "chokepoint-run-zero01";
  fs::create_directory(d);
  fs::create_symlink("/dev/zero", d / kOwnerFile);
  age(d);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  EXPECT_EQ(outcome(d.filename()), refusal::kRecordSymlink);
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 * 1024);  // KiB: not the GB it once took
  EXPECT_TRUE(fs::is_symlink(d / kOwnerFile));
}

TEST_F(SecurityOrphanCleanup, HugeOwnerRecordIsNotRead) {
  const fs::path d = base_ / "chokepoint-run-huge01";
  fs::create_directory(d);
  std::ofstream(d / kOwnerFile) << gone_owner_record() << std::string(8192, ' ');
  EXPECT_EQ(outcome(d.filename()), refusal::kRecordTooLarge);
  EXPECT_TRUE(fs::exists(d));
}

// A link named like a run directory, pointing at a directory that looks like
// an orphan: not followed, not removed.
TEST_F(SecurityOrphanCleanup, RunDirThatIsALinkIsLeftAlone) {
  const fs::path target = outside_ / "looks-orphaned";
  fs::create_directory(target);
  std::ofstream(target / kOwnerFile) << gone_owner_record();
  fs::create_symlink(target, base_ / "chokepoint-run-link01");
  EXPECT_EQ(outcome("chokepoint-run-link01"), refusal::kNotADirectory);
  EXPECT_TRUE(fs::exists(target / kOwnerFile));
}

// An orphan of this uid goes, but a link inside it is removed, not followed:
// the directory and file it points at stay.
TEST_F(SecurityOrphanCleanup, RemovingAnOrphanNeverFollowsALinkInIt) {
  const fs::path d = base_ / "chokepoint-run-gone01";
  fs::create_directories(d / "sub");
  std::ofstream(d / kOwnerFile) << gone_owner_record();
  fs::create_symlink(outside_, d / "dir-link");
  fs::create_symlink(outside_ / "victim", d / "sub" / "file-link");
  EXPECT_EQ(outcome(d.filename()), "removed");
  EXPECT_FALSE(fs::exists(d));
  EXPECT_EQ(checksum_of(outside_ / "victim"), victim_sum_);
}

// As root: a directory of another user (nobody) with a forged record of a
// gone agent, and a forged record of another user in a directory of ours.
TEST_F(SecurityOrphanCleanup, ForeignOwnedDirOrRecordIsLeftAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown to nobody";
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const fs::path foreign = base_ / "chokepoint-run-nobody";
  fs::create_directory(foreign);
  std::ofstream(foreign / kOwnerFile) << gone_owner_record();
  ASSERT_EQ(chown((foreign / kOwnerFile).c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  ASSERT_EQ(chown(foreign.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  EXPECT_EQ(outcome(foreign.filename()), refusal::kForeignOwner);
  EXPECT_TRUE(fs::exists(foreign / kOwnerFile));

  const fs::path forged = base_ / "chokepoint-run-forged";
  fs::create_directory(forged);
  std::ofstream(forged / kOwnerFile) << gone_owner_record();
  ASSERT_EQ(chown((forged / kOwnerFile).c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  EXPECT_EQ(outcome(forged.filename()), refusal::kRecordForeignOwner);
  EXPECT_TRUE(fs::exists(forged));
}

// Whether `pid` has `fifo` open and a thread of it waits in a pipe read
// (/proc/PID/task/TID/wchan: pipe_read, anon_pipe_read).
bool reads_fifo(pid_t pid, const std::string& fifo) {
  const fs::path proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  bool open = false;
  for (const auto& fd : fs::directory_iterator(proc / "fd", ec)) {
    if (fs::read_symlink(fd.path(), ec) == fifo) open = true;
  }
  if (!open) return false;
  for (const auto& task : fs::directory_iterator(proc / "task", ec)) {
    std::ifstream in(task.path() / "wchan");
    std::string wchan;
    if (in >> wchan && wchan.find("pipe_read") != std::string::npos) return true;
  }
  return false;
}

// The agent in a child process, its worker blocked reading a FIFO (as on a
// hung mount: no cancel reaches it): SIGTERM still ends the process, and its
// run directory is removed on the way.
TEST(SecurityAgentExit, SigtermEndsTheAgentWhileAWorkerIsBlockedOnAFifo) {
  const fs::path dir = make_temp_dir("agent-sec-exit");
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(sv[0]);
    _exit(serve(sv[1], sv[1], {"test-build", "0", {}}));
  }
  close(sv[1]);
  std::string run;
  int writer = -1;
  {
    AgentLink link(make_fd_stream(sv[0], sv[0], "test"), "test agent");
    link.handshake(10);
    json::object p = link.call("prepare", {{"dirs", json::array{dir.string()}}}, 10);
    run = msg::decode<msg::PrepareResult>(p, "prepare").dirs.at(dir.string());
    const std::string fifo = run + "/blocked.dat";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::thread caller([&] {
      try {
        link.call("disk", {{"dir", dir.string()}, {"op", "read"}, {"name", "blocked.dat"}}, 60);
      } catch (const Error&) {
        // The agent went away: expected.
      }
    });
    // A writer held open (O_RDWR never blocks): the agent's open succeeds and
    // its read() waits for data that never comes. SIGTERM goes once a thread
    // of the child sits in read(2) on the FIFO (/proc/PID/task/TID/syscall).
    writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(writer, 0);
    bool blocked = false;
    for (int i = 0; i < 2000 && !blocked; ++i) {
      blocked = reads_fifo(pid, fifo);
      if (!blocked) usleep(10000);
    }
    EXPECT_TRUE(blocked) << "the agent never blocked reading the FIFO";
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    // Gone within the grace (2 s) and some: not the forever a join took.
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 300 && done == 0; ++i) {
      done = waitpid(pid, &status, WNOHANG);
      if (done == 0) usleep(100000);
    }
    if (done == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    EXPECT_EQ(done, pid) << "the agent ignored SIGTERM while its worker was blocked";
    caller.join();
  }
  if (writer >= 0) close(writer);
  EXPECT_FALSE(fs::exists(run)) << "the run directory was left";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cp::agent
