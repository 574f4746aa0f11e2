#include "lab/sys.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "core/testing/scratch_dir.h"

namespace cp::lab::sys {
namespace {

// A fresh directory for one test (core/testing/scratch_dir.h), its path as text.
class TempDir : public cp::testing::ScratchDir {
 public:
  TempDir() : ScratchDir("cp-lab-sys-test") {}
  std::string path() const { return ScratchDir::path().string(); }
};

TEST(SysTest, ParsePidsTakesNumbersOnly) {
  EXPECT_EQ(parse_pids("12\n345\n"), (std::vector<pid_t>{12, 345}));
  EXPECT_EQ(parse_pids("7"), (std::vector<pid_t>{7}));
  EXPECT_EQ(parse_pids(""), (std::vector<pid_t>{}));
  EXPECT_EQ(parse_pids("0\n-3\nabc\n12x\n99\n"), (std::vector<pid_t>{99}));
  EXPECT_EQ(parse_pids("99999999999999\n5\n"), (std::vector<pid_t>{5}));
}

TEST(SysTest, WriteThenReadFile) {
  TempDir t;
  const std::string p = t.path() + "/a/b/f.txt";
  make_dirs(t.path() + "/a/b", 0755);
  EXPECT_FALSE(read_file(p).has_value());
  write_file(p, "hello\nworld\n", 0600);
  EXPECT_EQ(read_file(p).value(), "hello\nworld\n");
  struct stat st;
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  write_file(p, "short", 0644);  // replaces, never appends
  EXPECT_EQ(read_file(p).value(), "short");
  EXPECT_FALSE(exists(p + ".tmp"));
  EXPECT_THROW(write_file(t.path() + "/missing/dir/f", "x", 0644), Error);
  EXPECT_THROW(make_dirs(p + "/sub", 0755), Error);  // p is a file
}

TEST(SysTest, TailGivesTheLastLines) {
  TempDir t;
  const std::string p = t.path() + "/log";
  write_file(p, "one\ntwo\nthree\nfour\n", 0644);
  EXPECT_EQ(tail(p, 2), "three\nfour");
  EXPECT_EQ(tail(p, 10), "one\ntwo\nthree\nfour");
  EXPECT_EQ(tail(t.path() + "/nope", 3), "");
}

TEST(SysTest, RemoveTreeRemovesEverythingBelow) {
  TempDir t;
  const std::string root = t.path() + "/lab";
  make_dirs(root + "/server/ram", 0755);
  make_dirs(root + "/client/disk", 0755);
  write_file(root + "/lab.json", "{}", 0644);
  write_file(root + "/server/disk.img", "x", 0600);
  ASSERT_EQ(symlink("/etc/hostname", (root + "/link").c_str()), 0);
  remove_tree(root);
  EXPECT_FALSE(exists(root));
  EXPECT_TRUE(exists("/etc/hostname"));  // a symlink's target is left alone
  EXPECT_NO_THROW(remove_tree(root));    // absent: nothing to do
}

TEST(SysTest, ZombiesAndExitedProcessesAreNotAlive) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_TRUE(process_alive(child));
  EXPECT_FALSE(process_comm(child).empty());
  EXPECT_EQ(wait_exit({child}, 0.05), (std::vector<pid_t>{child}));
  kill(child, SIGKILL);
  // Not reaped yet: a zombie, which counts as exited.
  EXPECT_TRUE(wait_exit({child}, 10).empty());
  EXPECT_FALSE(process_alive(child));
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(process_alive(child));
  EXPECT_EQ(process_comm(child), "");
  EXPECT_EQ(process_cmdline(child), "");
  EXPECT_FALSE(process_alive(0));
  EXPECT_FALSE(process_alive(-1));
}

TEST(SysTest, CmdlineJoinsArguments) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string cmd;
  for (int i = 0; i < 200 && cmd != "sleep 30"; ++i) {
    cmd = process_cmdline(child);
    usleep(10000);
  }
  EXPECT_EQ(cmd, "sleep 30");
  EXPECT_EQ(process_comm(child), "sleep");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(SysTest, AbsentNamespacesAndLinks) {
  EXPECT_FALSE(netns_exists("cp-no-such-namespace"));
  EXPECT_TRUE(netns_pids("cp-no-such-namespace").empty());
  EXPECT_FALSE(process_in_netns(getpid(), "cp-no-such-namespace"));
  EXPECT_FALSE(same_netns_as_self("cp-no-such-namespace"));
  EXPECT_FALSE(link_exists("cpx-nonexist"));
  EXPECT_TRUE(link_exists("lo"));
  EXPECT_TRUE(loop_devices_backed_by("/no/such/image.img").empty());
  EXPECT_EQ(loop_backing_file("/dev/loop-no-such"), "");
}

// A one-shot TCP server on 127.0.0.1 that sends `greeting` to its first client.
class OneShotServer {
 public:
  explicit OneShotServer(std::string greeting) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CP_CHECK(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CP_CHECK(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    CP_CHECK(listen(fd_, 1) == 0);
    socklen_t len = sizeof a;
    CP_CHECK(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, g = std::move(greeting)] {
      int c = accept(fd_, nullptr, nullptr);
      if (c >= 0) {
        if (!g.empty()) (void)!write(c, g.data(), g.size());
        char b[16];
        (void)!read(c, b, sizeof b);  // until the client closes
        close(c);
      }
    });
  }
  ~OneShotServer() {
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(SysTest, SshBannerWantsSsh) {
  {
    OneShotServer s("SSH-2.0-OpenSSH_9.2p1 Debian\r\n");
    EXPECT_TRUE(ssh_banner("127.0.0.1", s.port(), 5));
  }
  {
    OneShotServer s("HTTP/1.1 400 Bad Request\r\n");
    EXPECT_FALSE(ssh_banner("127.0.0.1", s.port(), 5));
  }
  int port;
  {
    OneShotServer s("");  // accepts, says nothing: a timeout, not a hang
    port = s.port();
    EXPECT_FALSE(ssh_banner("127.0.0.1", port, 0.3));
  }
  EXPECT_FALSE(ssh_banner("127.0.0.1", port, 1));  // closed now: refused
}

TEST(SysTest, FindUserGivesTheEntrysIds) {
  const std::optional<User> root = find_user("root");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->gid, 0u);
  EXPECT_EQ(root->home, "/root");
  EXPECT_FALSE(find_user("cp-no-such-user").has_value());
}

// libnfs 4.0 looks up each NFSv4 owner string ("name@domain") with getpwnam;
// the miss rewrites getpwnam's static entry with passwd's last line. An answer
// from find_user is the caller's own and stays what it was.
TEST(SysTest, FindUserAnswerSurvivesALaterFailedGetpwnam) {
  const std::optional<User> root = find_user("root");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(getpwnam("cp-no-such-user@localdomain"), nullptr);
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->gid, 0u);
}

TEST(SysTest, FileLockExcludesASecondHolder) {
  TempDir t;
  const std::string p = t.path() + "/lock";
  {
    FileLock a(p, 1);
    try {
      FileLock b(p, 0.2);
      FAIL() << "second lock taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo);
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
  }
  EXPECT_NO_THROW(FileLock c(p, 0.2));  // released with the first
}

}  // namespace
}  // namespace cp::lab::sys
