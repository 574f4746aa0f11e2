// Integration test (root, label integration): the ftp and smb drivers against
// servers the lab does not run by default — ProFTPD and Pure-FTPd (started
// here, in the lab's server host, on ports of their own, as the lab's share
// user, chroot'ed and not) and Samba with signing or encryption required or
// capped at older dialects — with checksums of what arrived compared with
// what was sent, removal, and the errors where a server refuses.
//
// ProFTPD and Pure-FTPd Conflict with vsftpd in Debian (all Provide
// ftp-server), so scripts/install-deps.sh unpacks their Debian 12 packages
// into /opt/chokepoint/ftpd; each server started here is stopped by its PID.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/checksum.h"
#include "core/error.h"
#include "core/process.h"
#include "lab/lab.h"
#include "lab/layout.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/testing/error_of.h"
#include "transfer/testing/lab_world.h"

namespace cp::transfer {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the lab world (transfer/testing/lab_world.h)
const std::string kFtpdRoot = "/opt/chokepoint/ftpd/usr/sbin/";

// A server process started in the server host's mount and network
// namespaces (argv run by `sh -c` there); stopped by its PID.
class Daemon {
 public:
  explicit Daemon(const std::string& command) {
    const std::string log = g_world->dir + "/daemon.out";
    pid_ = fork();
    CP_CHECK(pid_ >= 0);
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      const std::string ns = std::to_string(g_world->lab.server.sshd_pid);
      // sh execs the server, so this PID is the server's listener.
      execlp("nsenter", "nsenter", "-t", ns.c_str(), "-m", "-n", "--", "sh", "-c",
             ("exec " + command).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Daemon() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  bool running() const {
    int status = 0;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  pid_t pid_ = -1;
};

// Waits until something listens on the server's data address at `port`.
void wait_listening(int port) {
  for (int i = 0; i < 100; ++i) {
    RunResult r = run_command({"ip", "netns", "exec", g_world->lab.server.netns, "ss", "-Hltn",
                               fmt::format("sport = :{}", port)},
                              "", 10);
    if (r.exit_code == 0 && r.out.find("LISTEN") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "nothing listens on port " << port;
}

class ServersLabTest : public LabDriverTest {
 protected:
  ServersLabTest() : LabDriverTest("chokepoint-servers-test") {}
  // 10 MB and 100 MB written and read back through `s` as `dir`/<name>; the
  // server's copy (at server_dir/<name>) matches; removal removes it.
  void round_trip(Session& s, const std::string& dir, const std::string& server_dir) {
    uint64_t seed = 3;
    for (uint64_t size : {kMB10, kMB100}) {
      SCOPED_TRACE(size);
      const std::string name = fmt::format("{}/f-{}.dat", run_, size);
      const std::string rel = dir.empty() ? name : dir + "/" + name;
      const std::string sent = put(s, rel, size, ++seed);
      EXPECT_EQ(server_checksum(server_dir + "/" + name), sent);
      EXPECT_EQ(get(s, rel), sent);
      s.remove(rel);
      EXPECT_NE(on_server("test -e " + shell_quote(server_dir + "/" + name)).exit_code, 0);
    }
  }
  // An FTP server on `port` that requires TLS with the lab's certificate (in
  // `cert_dir`): a plain session is refused with the fix (ftps://, a config
  // error); explicit TLS moves the files of the RAM share `ram_share`.
  void expect_tls_required(int port, const std::string& cert_dir, const std::string& ram_share) {
    wait_listening(port);
    EXPECT_EQ(kind_of([&] { connect(share("ftp", "ram", port)); }), ErrorKind::kConfig);
    Share tls = share("ftps", "ram", port);
    tls.options["ca_file"] = cert_dir + "ftps-cert.pem";
    auto s = connect(tls);
    EXPECT_EQ(s->properties().at("tls"), "explicit");
    round_trip(*s, "", ram_share);
  }
};

std::string proftpd_conf(int port, const std::string& extra) {
  const std::string d = g_world->dir;
  return fmt::format(
      "ServerType standalone\nDefaultServer on\nPort {port}\nDefaultAddress {addr}\n"
      "SocketBindTight on\nUseIPv6 off\nUser nobody\nGroup nogroup\n"
      "PidFile {d}/proftpd-{port}.pid\nScoreboardFile {d}/proftpd-{port}.scoreboard\n"
      "DelayTable none\nWtmpLog off\nUseReverseDNS off\nTransferLog none\n"
      "SystemLog {d}/proftpd-{port}.log\n"
      // The lab's share user logs in with /usr/sbin/nologin as its shell.
      "RequireValidShell off\nAuthOrder mod_auth_unix.c\n"
      "PassivePorts 30200 30299\nAllowOverwrite on\n{extra}",
      fmt::arg("port", port), fmt::arg("addr", g_world->lab.server.data_address), fmt::arg("d", d),
      fmt::arg("extra", extra));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// ProFTPD, the user's home (the lab's FTP root, where ram and disk are
// symlinks to the shares) unchroot'ed, then chroot'ed (DefaultRoot) at the
// ram share's parent with EPSV refused, so that the driver falls back to
// PASV and computes absolute paths from a PWD of "/".
TEST_F(ServersLabTest, ProftpdWithAndWithoutChrootWritesReadsAndRemoves) {
  const lab::ServerFiles f = lab::server_files(g_world->lab);
  {
    SCOPED_TRACE("proftpd, no chroot, EPSV");
    const std::string conf = g_world->dir + "/proftpd-2121.conf";
    write_file(conf, proftpd_conf(2121, ""));
    Daemon d(kFtpdRoot + "proftpd -n -c " + conf);
    wait_listening(2121);
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(medium);
      auto s = connect(share("ftp", medium, 2121));
      round_trip(*s, "", medium == "ram" ? f.ram_share : f.disk_share);
    }
    EXPECT_TRUE(d.running());
  }
  {
    SCOPED_TRACE("proftpd, DefaultRoot, EPSV refused");
    const std::string conf = g_world->dir + "/proftpd-2122.conf";
    const std::string root = fs::path(f.ram_share).parent_path();
    write_file(conf, proftpd_conf(2122, fmt::format("DefaultRoot {}\n<Limit EPSV>\n  DenyAll\n"
                                                    "</Limit>\n",
                                                    root)));
    Daemon d(kFtpdRoot + "proftpd -n -c " + conf);
    wait_listening(2122);
    const std::string share_name = fs::path(f.ram_share).filename();
    auto s = connect(share("ftp", share_name, 2122));
    round_trip(*s, "", f.ram_share);
    EXPECT_TRUE(d.running());
  }
  {
    // mod_tls with TLSRequired and the lab's certificate: a plain session is
    // refused with the fix (ftps://); explicit TLS moves the files.
    SCOPED_TRACE("proftpd, TLSRequired");
    const std::string conf = g_world->dir + "/proftpd-2127.conf";
    const std::string dir = g_world->lab.dir + "/server/ftp/";
    write_file(conf,
               proftpd_conf(2127, fmt::format("ModulePath /opt/chokepoint/ftpd/usr/lib/proftpd\n"
                                              "LoadModule mod_tls.c\nTLSEngine on\n"
                                              "TLSRequired on\nTLSProtocol TLSv1.2 TLSv1.3\n"
                                              "TLSRSACertificateFile {0}ftps-cert.pem\n"
                                              "TLSRSACertificateKeyFile {0}ftps-key.pem\n"
                                              "TLSOptions NoSessionReuseRequired\n",
                                              dir)));
    Daemon d(kFtpdRoot + "proftpd -n -c " + conf);
    expect_tls_required(2127, dir, f.ram_share);
    EXPECT_TRUE(d.running());
  }
}

// Pure-FTPd (unix accounts): it logs in only users whose shell is listed in
// /etc/shells (documented; the lab's user has /usr/sbin/nologin), which the
// driver reports as a refused login; with nologin listed (a private mount
// namespace's /etc/shells) the files go both ways intact. With -A (chroot
// everyone) the home's symlinks to the shares point outside the chroot, so
// the share is missing there: the driver names the directory (a config error).
TEST_F(ServersLabTest, PureFtpdWritesReadsAndRemovesAndReportsRefusals) {
  const lab::ServerFiles f = lab::server_files(g_world->lab);
  const std::string base =
      kFtpdRoot + "pure-ftpd -l unix -E -u 1 -p 30300:30399 -S " + g_world->lab.server.data_address;
  {
    SCOPED_TRACE("shell not in /etc/shells");
    Daemon d(base + ",2123");
    wait_listening(2123);
    EXPECT_EQ(kind_of([&] { connect(share("ftp", "ram", 2123)); }), ErrorKind::kConfig);
  }
  const std::string shells = g_world->dir + "/shells";
  {
    std::ifstream in("/etc/shells");
    std::stringstream ss;
    ss << in.rdbuf() << "/usr/sbin/nologin\n";
    write_file(shells, ss.str());
  }
  const std::string with_shells =
      "unshare -m --propagation private sh -c " +
      shell_quote("mount --bind " + shells + " /etc/shells && exec " + base);
  {
    SCOPED_TRACE("pure-ftpd, no chroot");
    Daemon d(with_shells + shell_quote(",2124"));
    wait_listening(2124);
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(medium);
      auto s = connect(share("ftp", medium, 2124));
      round_trip(*s, "", medium == "ram" ? f.ram_share : f.disk_share);
    }
  }
  {
    // TLS required (-Y 2), the lab's certificate: a plain session is refused
    // with the fix (ftps://); explicit TLS moves the files.
    SCOPED_TRACE("pure-ftpd -Y 2");
    const std::string dir = g_world->lab.dir + "/server/ftp/";
    Daemon d(with_shells +
             shell_quote(",2126 -Y 2 -2 " + dir + "ftps-cert.pem," + dir + "ftps-key.pem"));
    expect_tls_required(2126, dir, f.ram_share);
  }
  {
    SCOPED_TRACE("pure-ftpd -A");
    Daemon d(with_shells + shell_quote(",2125 -A"));
    wait_listening(2125);
    EXPECT_EQ(kind_of([&] {
                auto s = connect(share("ftp", "ram", 2125));
                put(*s, run_ + ".dat", 1000, 1);
              }),
              ErrorKind::kConfig);
  }
}

// Samba re-configured in place ([global] lines, smbd reload-config): signing
// mandatory, encryption required, dialects capped at SMB2_10 and SMB3_00.
// Files go both ways intact and the probe records the dialect the server
// chose; with encryption required a client capped below SMB3 cannot log in.
TEST_F(ServersLabTest, SambaSigningEncryptionAndOlderDialects) {
  SambaGlobals samba("");
  const std::string ram = lab::server_files(g_world->lab).ram_share;
  struct Case {
    std::string line, dialect;
  };
  for (const Case& c :
       {Case{"server signing = mandatory", "SMB3_02"}, Case{"smb encrypt = required", "SMB3_02"},
        Case{"server max protocol = SMB2_10", "SMB2_10"},
        Case{"server max protocol = SMB3_00", "SMB3_00"}}) {
    SCOPED_TRACE(c.line);
    ASSERT_NO_FATAL_FAILURE(samba.set("  " + c.line + "\n"));
    for (const char* encrypt : {"default", "none"}) {
      SCOPED_TRACE(encrypt);
      Share sh = share("smb", "ram");
      sh.options["encrypt"] = encrypt;
      auto s = connect(sh);
      EXPECT_EQ(s->properties().at("dialect"), c.dialect);
      round_trip(*s, "", ram);
    }
    if (c.line == "smb encrypt = required") {
      Share sh = share("smb", "ram");
      sh.options["max_protocol"] = "SMB2_10";
      EXPECT_EQ(kind_of([&] { connect(sh); }), ErrorKind::kConfig);
    }
  }
}

}  // namespace
}  // namespace cp::transfer
