// Integration test (root, label integration): the ftp, smb, nfs and path drivers
// against real servers — the lab's vsftpd, smbd and NFS-Ganesha — with checksums of what
// arrived compared with what was sent, the documented errors, bounded memory
// with a 1 GiB file, and the lab's throttles.
//
// It brings up its own lab instance (lab::test_instance(), beside any lab a
// user has up, which it never touches) in /var/tmp and takes it down at the end. The drivers run in
// this process with its thread moved into the client host's network
// namespace (setns), since the servers listen on the data address only,
// which the root namespace cannot reach. Traffic stays inside the lab.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "core/checksum.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "lab/lab.h"
#include "lab/layout.h"
#include "lab/servers.h"
#include "lab/sys.h"
#include "lab/throttle.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/testing/children.h"
#include "transfer/testing/error_of.h"
#include "transfer/testing/lab_world.h"

namespace cp::transfer {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the lab world (transfer/testing/lab_world.h)

// The same as put, the way the client agent writes: each piece (at most
// `piece` bytes) filled straight into the driver's write_buffer.
std::string put_in_place(Session& s, const std::string& rel, uint64_t size, uint64_t seed,
                         size_t piece) {
  Checksum sum;
  auto f = s.open(rel, Mode::kWrite, size);
  for (uint64_t off = 0; off < size;) {
    const std::span<char> room =
        f->write_buffer(static_cast<size_t>(std::min<uint64_t>(piece, size - off)));
    fill_pattern(room.data(), room.size(), seed, off);
    sum.update(room.data(), room.size());
    f->commit_write(room.size());
    off += room.size();
  }
  f->close();
  return sum.hex() + "/" + std::to_string(size);
}

class DriversLabTest : public LabDriverTest {
 protected:
  DriversLabTest() : LabDriverTest("chokepoint-drivers-test") {}
  // Puts `size` pattern bytes of `seed` to `rel` on the `medium` share and
  // checks that the server holds them; their checksum.
  static std::string put_checked(Session& s, const std::string& rel, uint64_t size, uint64_t seed,
                                 const std::string& medium = "ram") {
    const std::string sent = put(s, rel, size, seed);
    EXPECT_EQ(server_checksum(share_dir(medium) + "/" + rel), sent) << rel;
    return sent;
  }
  // Whether `s`'s properties hold each key of `want` with its value; on
  // failure, the ones that differ.
  static ::testing::AssertionResult has_properties(const Session& s,
                                                   const std::map<std::string, std::string>& want) {
    const auto props = s.properties();
    std::string differ;
    for (const auto& [key, value] : want) {
      const auto it = props.find(key);
      const std::string got = it == props.end() ? "(none)" : it->second;
      if (got != value) differ += " " + key + "=" + got + " (not " + value + ")";
    }
    if (differ.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << differ;
  }
  // The message of the Error that `f` throws.
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return "(no error)";
  }
};

TEST_F(DriversLabTest, WritesAndReadsTenAndHundredMegabytesWithMatchingChecksums) {
  for (const std::string protocol : {"ftp", "smb"}) {
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(protocol + " " + medium);
      auto s = connect(share(protocol, medium));
      uint64_t seed = 1;
      for (uint64_t size : {kMB10, kMB100}) {
        // Write: what the server stored is what was sent.
        const std::string rel = fmt::format("{}/w-{}.dat", run_, size);
        const std::string sent = put_checked(*s, rel, size, ++seed, medium);
        // FTP records what TCP kept in flight on the data connection.
        if (protocol == "ftp") {
          EXPECT_GT(std::stoull(s->properties().at("tcp_in_flight_bytes")), 0u);
        }
        // Read: a file the server laid out arrives intact.
        const std::string data = pattern(size, ++seed);
        const std::string path = share_dir(medium) + "/" + run_ + fmt::format("/r-{}.dat", size);
        RunResult r = on_server("cat > " + shell_quote(path), data);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(get(*s, fmt::format("{}/r-{}.dat", run_, size)), checksum_of(data));
        if (protocol == "ftp") {
          EXPECT_GT(std::stoull(s->properties().at("tcp_in_flight_bytes")), 0u);
        }
        s->remove(rel);
        EXPECT_NE(on_server("test -e " + shell_quote(share_dir(medium) + "/" + rel)).exit_code, 0);
      }
    }
  }
}

// smbd with `smb2 max read/write = 16384`: the driver records the small
// sizes the server announced, reads and writes intact (a read that ran past
// the end of the file used to leave requests in flight, and every later call
// failed with EINVAL), and a read call kept several requests in flight.
TEST_F(DriversLabTest, SmbHonoursASmallNegotiatedReadAndWriteSize) {
  SambaGlobals samba("  smb2 max read = 16384\n  smb2 max write = 16384\n");

  // One connection, as chosen: what this test holds is the requests of one
  // session (auto's choice rests on a round trip a busy host can stretch past
  // 1 ms; its rule has unit tests).
  Share one = share("smb", "ram");
  one.options["connections"] = "1";
  auto s = connect(one);
  EXPECT_TRUE(has_properties(*s, {{"max_read_size", "16384"},
                                  {"max_write_size", "16384"},
                                  {"connections_chosen", "option"},
                                  {"connections", "1"}}));
  // 10 MB and a tail that is not a whole number of calls, both ways.
  const uint64_t size = kMB10 + 12345;
  const std::string rel = run_ + "/small-io.dat";
  const std::string sent = put_checked(*s, rel, size, 7);
  // libsmbclient writes one request at a time.
  EXPECT_TRUE(has_properties(*s, {{"flight_op", "write"},
                                  {"request_size", "16384"},
                                  {"depth", "1"},
                                  {"in_flight_bytes", "16384"}}));
  // Twice: the second read would fail if the first left requests in flight.
  EXPECT_EQ(get(*s, rel), sent);
  EXPECT_EQ(get(*s, rel), sent);
  auto props = s->properties();
  EXPECT_EQ(props.at("flight_op"), "read");
  EXPECT_EQ(props.at("request_size"), "16384");
  EXPECT_GT(std::stoull(props.at("depth")), 1u);
  EXPECT_EQ(std::stoull(props.at("in_flight_bytes")), std::stoull(props.at("depth")) * 16384);
  s->remove(rel);
}

// connections=3: helper processes move a file's calls (32 KiB each here, so
// many rounds) three at a time; what arrives is what was sent both ways, the
// sample records three calls in flight, and the helpers end with the session.
TEST_F(DriversLabTest, SmbHelperConnectionsKeepSeveralCallsInFlight) {
  Share sh = share("smb", "ram");
  sh.options = {{"connections", "3"}, {"io_size", "64KiB"}};
  std::vector<pid_t> helpers;
  {
    auto s = connect(sh);
    EXPECT_EQ(s->properties().at("connections"), "3");
    const uint64_t size = kMB10 + 12345;  // not a whole number of calls
    const std::string rel = run_ + "/pool.dat";
    const std::string sent = put_checked(*s, rel, size, 11);
    auto props = s->properties();
    EXPECT_EQ(props.at("flight_op"), "write");
    EXPECT_EQ(std::stoull(props.at("in_flight_bytes")), 3u * 32768);
    EXPECT_EQ(get(*s, rel), sent);
    EXPECT_EQ(get(*s, rel), sent);
    props = s->properties();
    EXPECT_EQ(props.at("flight_op"), "read");
    EXPECT_EQ(std::stoull(props.at("in_flight_bytes")), 3u * 32768);
    // Random reads go through the session's own connection.
    auto f = s->open(rel, Mode::kRead, 0);
    std::vector<char> buf(1000);
    EXPECT_EQ(f->pread(buf.data(), buf.size(), 5000000), buf.size());
    EXPECT_EQ(std::string(buf.data(), buf.size()), pattern(size, 11).substr(5000000, 1000));
    f->close();
    s->remove(rel);
    helpers = testing::child_pids();
    EXPECT_GE(helpers.size(), 3u);
  }
  for (pid_t p : helpers) EXPECT_FALSE(fs::exists(fmt::format("/proc/{}", p))) << "helper " << p;
}

// A small file (the caller expects it to fit in one call) goes through the
// session's own connection: the helpers would only open and close it, a
// CREATE and a CLOSE each for no data, server work a copy of small files over
// one connection does not cause. A file of several calls still goes through
// them. Both arrive whole.
TEST_F(DriversLabTest, SmbSmallFilesSkipTheHelperConnections) {
  Share sh = share("smb", "ram");
  sh.options = {{"connections", "3"}, {"io_size", "64KiB"}};
  auto s = connect(sh);
  ASSERT_EQ(s->properties().at("connections"), "3");
  const auto through_helpers = [&] { return s->properties().at("files_through_helpers"); };
  const std::string small = run_ + "/small.dat";
  const std::string sent = put_checked(*s, small, 4096, 21);
  EXPECT_EQ(get(*s, small, 4096), sent);
  EXPECT_EQ(through_helpers(), "0");
  const std::string big = run_ + "/big.dat";
  const std::string sent_big = put_checked(*s, big, 1'000'000, 22);
  EXPECT_EQ(get(*s, big, 1'000'000), sent_big);
  EXPECT_EQ(through_helpers(), "2");  // the write and the read
  s->remove(small);
  s->remove(big);
}

// Degrade, don't fail: a server that refuses a client's extra connections to
// a share while the first one works. Here smbd's `max connections = 1`
// (Debian leaves it 0, unlimited), a departure that stands in for any server
// refusing or aborting the helpers' connections (issue 23's smbd aborted
// them). With connections=3 every transfer still succeeds, on the session's
// own connection, and the sample says so: 1 connection of the 3 asked, and
// why (connections_reason), so a verdict can call its figure a lower bound.
// No helper process is left behind.
TEST_F(DriversLabTest, SmbRefusedHelperConnectionsFinishOnOneAndSayWhy) {
  SambaGlobals samba("  max connections = 1\n");
  Share sh = share("smb", "ram");
  sh.options = {{"connections", "3"}, {"io_size", "64KiB"}};
  auto s = connect(sh);
  EXPECT_TRUE(has_properties(*s, {{"connections", "1"},
                                  {"connections_asked", "3"},
                                  {"connections_chosen", "option"},
                                  {"connections_reason", "helpers_refused"}}));
  EXPECT_TRUE(testing::child_pids().empty()) << "the helpers were not stopped";
  for (uint64_t seed : {21, 22}) {
    const uint64_t size = kMB10 + 12345;
    const std::string rel = fmt::format("{}/refused-{}.dat", run_, seed);
    const std::string sent = put_checked(*s, rel, size, seed);
    EXPECT_EQ(get(*s, rel), sent);
    EXPECT_TRUE(
        has_properties(*s, {{"connections", "1"}, {"connections_reason", "helpers_refused"}}));
    s->remove(rel);
  }
}

// The established TCP connections of the lab host `netns` with port 445 at
// one end: {the other end's port, the pid that holds it} (`ss -tnpH`).
std::vector<std::pair<int, pid_t>> smb_sockets(const std::string& netns) {
  RunResult r = run_command({"ip", "netns", "exec", netns, "ss", "-tnpH"}, "", 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::pair<int, pid_t>> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string state, recvq, sendq, local, peer, users;
    f >> state >> recvq >> sendq >> local >> peer >> users;
    const size_t at = users.find("pid=");
    if (at == std::string::npos) continue;
    const pid_t pid = std::stoi(users.substr(at + 4));
    auto port = [](const std::string& a) { return std::stoi(a.substr(a.rfind(':') + 1)); };
    if (port(local) == 445) out.push_back({port(peer), pid});
    if (port(peer) == 445) out.push_back({port(local), pid});
  }
  return out;
}

// Kills the smbd processes that serve this process's helper connections
// (found by the helpers' TCP ports), as a server aborting them would; returns
// how many, once they are gone.
size_t kill_helper_smbds() {
  const std::vector<pid_t> helpers = testing::child_pids();
  std::vector<int> helper_ports;
  for (const auto& [port, pid] : smb_sockets(g_world->lab.client.netns)) {
    if (std::find(helpers.begin(), helpers.end(), pid) != helpers.end()) {
      helper_ports.push_back(port);
    }
  }
  std::vector<pid_t> killed;
  for (const auto& [port, pid] : smb_sockets(g_world->lab.server.netns)) {
    if (std::find(helper_ports.begin(), helper_ports.end(), port) == helper_ports.end()) continue;
    EXPECT_EQ(lab::sys::process_comm(pid), "smbd");
    if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
  }
  for (pid_t p : killed) {
    for (int i = 0; i < 500 && fs::exists(fmt::format("/proc/{}", p)); ++i) ::usleep(10000);
  }
  return killed.size();
}

// As above, but the server aborts the helpers' connections after they logged
// in (their smbd processes killed): between files, so the next open degrades,
// and in the middle of a read, which goes on from where it was on the
// session's own connection. Every transfer succeeds, and the sample says why.
TEST_F(DriversLabTest, SmbAbortedHelperConnectionsFinishOnOneAndSayWhy) {
  Share sh = share("smb", "ram");
  sh.options = {{"connections", "3"}, {"io_size", "64KiB"}};
  const uint64_t size = kMB10 + 12345;
  {
    SCOPED_TRACE("aborted between files");
    auto s = connect(sh);
    ASSERT_EQ(s->properties().at("connections"), "3");
    ASSERT_EQ(kill_helper_smbds(), 3u);
    const std::string rel = run_ + "/aborted.dat";
    const std::string sent = put_checked(*s, rel, size, 31);
    EXPECT_EQ(get(*s, rel), sent);
    const auto props = s->properties();
    EXPECT_EQ(props.at("connections"), "1");
    EXPECT_EQ(props.at("connections_asked"), "3");
    EXPECT_EQ(props.at("connections_reason"), "helpers_aborted");
    s->remove(rel);
    EXPECT_TRUE(testing::child_pids().empty()) << "the helpers were not stopped";
  }
  {
    SCOPED_TRACE("aborted in the middle of a read");
    auto s = connect(sh);
    const std::string rel = run_ + "/aborted-read.dat";
    const std::string sent = put(*s, rel, size, 32);
    ASSERT_EQ(s->properties().at("connections"), "3");
    auto f = s->open(rel, Mode::kRead, size);
    Checksum sum;
    std::vector<char> buf(1 << 20);
    size_t n = f->read(buf.data(), buf.size());
    ASSERT_GT(n, 0u);
    sum.update(buf.data(), n);
    uint64_t got = n;
    ASSERT_EQ(kill_helper_smbds(), 3u);
    while ((n = f->read(buf.data(), buf.size())) > 0) {
      sum.update(buf.data(), n);
      got += n;
    }
    f->close();
    EXPECT_EQ(sum.hex() + "/" + std::to_string(got), sent);
    const auto props = s->properties();
    EXPECT_EQ(props.at("connections"), "1");
    EXPECT_EQ(props.at("connections_reason"), "helpers_aborted");
    s->remove(rel);
  }
}

// Reads ask for no size (see smb/smb_session.h): each ends at the file's end whatever
// the caller expected, with helpers and without, at sizes that end inside a
// call and on a call's boundary.
TEST_F(DriversLabTest, SmbReadsEndAtTheFileEndWhateverSizeWasExpected) {
  for (const char* conns : {"1", "3"}) {
    SCOPED_TRACE(std::string("connections=") + conns);
    Share sh = share("smb", "ram");
    sh.options = {{"connections", conns}, {"io_size", "64KiB"}};
    auto s = connect(sh);
    // 0, inside a call, a helper call's boundary (32 KiB halves), a whole
    // round of helper calls, and more than one round.
    for (uint64_t size : {uint64_t{0}, uint64_t{1000}, uint64_t{32768}, uint64_t{6 * 32768},
                          uint64_t{kMB10 + 12345}}) {
      SCOPED_TRACE(size);
      const std::string rel = fmt::format("{}/end-{}.dat", run_, size);
      const std::string sent = put(*s, rel, size, 5);
      for (uint64_t hint : {uint64_t{0}, size, size / 2, size + 1, size + 100000, size * 3}) {
        SCOPED_TRACE(hint);
        EXPECT_EQ(get(*s, rel, hint), sent);
      }
      s->remove(rel);
    }
    EXPECT_NE(s->properties().at("path_rtt_samples"), "0");
  }
}

// Helper connections writing a file of another size than the one they are
// told to expect (or none told) still deliver it whole and in order, and the
// pool records one call per busy helper in flight (32 KiB halves here).
TEST_F(DriversLabTest, SmbHelperWritesArriveWholeWhateverSizeWasExpected) {
  Share sh = share("smb", "ram");
  sh.options = {{"connections", "3"}, {"io_size", "64KiB"}};
  auto s = connect(sh);
  for (uint64_t size :
       {uint64_t{0}, uint64_t{1000}, uint64_t{6 * 32768}, uint64_t{kMB10 + 12345}}) {
    for (uint64_t hint : {uint64_t{0}, size, size / 2, size + 1, size * 3}) {
      SCOPED_TRACE(fmt::format("{} bytes, {} expected", size, hint));
      const std::string rel = fmt::format("{}/w-{}-{}.dat", run_, size, hint);
      std::vector<char> buf(kBlock);
      Checksum sum;
      auto f = s->open(rel, Mode::kWrite, hint);
      for (uint64_t off = 0; off < size; off += kBlock) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, size - off));
        fill_pattern(buf.data(), n, 17, off);
        sum.update(buf.data(), n);
        f->write(buf.data(), n);
      }
      f->close();
      EXPECT_EQ(server_checksum(share_dir("ram") + "/" + rel),
                sum.hex() + "/" + std::to_string(size));
      if (size > 6 * 32768) {
        EXPECT_EQ(std::stoull(s->properties().at("in_flight_bytes")), 3u * 32768);
      }
      s->remove(rel);
    }
  }
}

TEST_F(DriversLabTest, WrongPasswordUnknownShareAndClosedPort) {
  for (const std::string protocol : {"ftp", "smb"}) {
    SCOPED_TRACE(protocol);
    Share bad = share(protocol, "ram");
    bad.password = "not-" + g_world->password;
    EXPECT_NE(error_of([&] {
                connect(bad);
              }).find("refused the login of user '" + g_world->lab.share_user + "'"),
              std::string::npos)
        << error_of([&] { connect(bad); });
    const std::string unknown = error_of([&] { connect(share(protocol, "nosuch")); });
    EXPECT_NE(unknown.find(protocol == "ftp" ? "has no directory /nosuch" : "has no share"),
              std::string::npos)
        << unknown;
    Share closed = share(protocol, "ram");
    closed.url = fmt::format("{}://{}:2999/ram", protocol, g_world->lab.server.data_address);
    const std::string refused = error_of([&] { connect(closed); });
    EXPECT_NE(
        refused.find("cannot connect to the " + std::string(protocol == "ftp" ? "FTP" : "SMB") +
                     " server at " + g_world->lab.server.data_address + ":2999"),
        std::string::npos)
        << refused;
  }
}

TEST_F(DriversLabTest, FtpsVerifiedAgainstTheLabCertificate) {
  const std::string cert = lab::server_files(g_world->lab).ftps_cert;
  Share tls = share("ftps", "ram");
  tls.options["ca_file"] = cert;
  auto s = connect(tls);
  // The session says it is encrypted.
  const auto props = s->properties();
  ASSERT_TRUE(props.contains("tls"));
  EXPECT_EQ(props.at("tls"), "explicit");
  // Both directions arrive intact over TLS.
  const std::string rel = run_ + "/tls-w.dat";
  const std::string sent = put_checked(*s, rel, kMB10, 41);
  EXPECT_EQ(get(*s, rel), sent);
  s->remove(rel);
  // Without the certificate the server is not trusted, and the error says what to do.
  const std::string untrusted = error_of([&] { connect(share("ftps", "ram")); });
  EXPECT_NE(
      untrusted.find("TLS with the FTP server " + g_world->lab.server.data_address + ":21 failed"),
      std::string::npos)
      << untrusted;
  EXPECT_NE(untrusted.find("ca_file=PATH"), std::string::npos) << untrusted;
  // A CA file on plain FTP, or one that cannot be read, is a configuration error.
  Share plain = share("ftp", "ram");
  plain.options["ca_file"] = cert;
  EXPECT_NE(error_of([&] { connect(plain); }).find("share option ca_file is for ftps:// URLs"),
            std::string::npos);
  Share missing = share("ftps", "ram");
  missing.options["ca_file"] = "/nonexistent/ca.pem";
  EXPECT_NE(error_of([&] { connect(missing); }).find("cannot read '/nonexistent/ca.pem'"),
            std::string::npos);
}

TEST_F(DriversLabTest, ReadOnlyShareAndMissingFile) {
  for (const std::string protocol : {"ftp", "smb"}) {
    SCOPED_TRACE(protocol);
    auto ro = connect(share(protocol, lab::kReadOnlyShare));
    const std::string refused = error_of([&] { put(*ro, "x.dat", kMB10, 1); });
    EXPECT_NE(
        refused.find(protocol == "ftp" ? "refused to store x.dat" : "refused to write ro/x.dat"),
        std::string::npos)
        << refused;
    auto s = connect(share(protocol, "ram"));
    const std::string missing = error_of([&] { s->open(run_ + "/nothere.dat", Mode::kRead, 0); });
    EXPECT_NE(missing.find("no file"), std::string::npos) << missing;
  }
}

TEST_F(DriversLabTest, FullDiskIsReported) {
  // A 2 MiB tmpfs inside the ram share, in the server host only.
  const std::string tiny = share_dir("ram") + "/" + run_ + "/tiny";
  RunResult r =
      on_server(fmt::format("mkdir -p {0} && mount -t tmpfs -o size=2m cp-tiny {0} && "
                            "chown {1}:{1} {0}",
                            shell_quote(tiny), g_world->lab.share_user));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string protocol : {"ftp", "smb"}) {
    SCOPED_TRACE(protocol);
    auto s = connect(share(protocol, "ram"));
    const std::string full = error_of([&] { put(*s, run_ + "/tiny/big.dat", kMB10, 3); });
    EXPECT_TRUE(full.find("its disk is full") != std::string::npos ||
                full.find("its disk is probably full") != std::string::npos)
        << full;
    on_server("rm -f " + shell_quote(tiny + "/big.dat"));
  }
  on_server("umount " + shell_quote(tiny));
}

// Peak RSS growth (KiB) of a child process that moves a 1 GiB file up and
// back down through `protocol`; -1 when the child failed.
long rss_growth_kib(DriversLabTest* t, const Share& sh, const std::string& rel) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    long growth = -1;
    try {
      CancelToken cancel;
      auto s = make_driver(sh.url.substr(0, 3))->connect(sh, cancel);
      rusage before{};
      getrusage(RUSAGE_SELF, &before);
      const std::string sent = put(*s, rel, 1ull << 30, 9);
      const std::string got = get(*s, rel);
      s->remove(rel);
      rusage after{};
      getrusage(RUSAGE_SELF, &after);
      if (sent == got) growth = after.ru_maxrss - before.ru_maxrss;
    } catch (...) {
    }
    (void)!write(pipefd[1], &growth, sizeof growth);
    _exit(0);
  }
  close(pipefd[1]);
  long growth = -1;
  if (read(pipefd[0], &growth, sizeof growth) != sizeof growth) growth = -1;
  close(pipefd[0]);
  waitpid(pid, nullptr, 0);
  return growth;
}

TEST_F(DriversLabTest, MemoryStaysBoundedWithAOneGigabyteFile) {
  for (const std::string protocol : {"ftp", "smb", "nfs3", "nfs4"}) {
    SCOPED_TRACE(protocol);
    const bool nfs = protocol.starts_with("nfs");
    Share sh = share(nfs ? "nfs" : protocol, "ram");
    // NFS's bound adds the 4 requests of 1 MiB it keeps in flight by default,
    // once in its own buffers and once in libnfs's (the encoded WRITEs).
    if (nfs) sh.options["version"] = protocol.substr(3);
    const long bound = nfs ? (16 + 2 * 4) * 1024 : 16 * 1024;
    const long growth = rss_growth_kib(this, sh, run_ + "/huge.dat");
    ASSERT_GE(growth, 0) << "the 1 GiB round trip failed or its checksums differ";
    EXPECT_LT(growth, bound) << "peak RSS grew by " << growth << " KiB";
    RecordProperty(protocol + "_rss_growth_kib", static_cast<int>(growth));
  }
}

// --- nfs: the lab's NFS-Ganesha ----------------------------------------------

Share nfs_share(const Share& base, int version) {
  Share s = base;
  s.options["version"] = std::to_string(version);
  s.options["timeout"] = "10s";
  return s;
}

// Both versions, both media, both directions: what arrives is what was sent,
// files belong to the share user (AUTH_SYS with its uid), and each session
// records what it negotiated and kept in flight.
TEST_F(DriversLabTest, NfsV3AndV4WriteAndReadWithMatchingChecksums) {
  // Copied now: getpwnam's answer is a static buffer that libnfs's own
  // getpwnam (each NFSv4 owner it parses) overwrites with passwd's last line,
  // another lab's user when one came up after this one.
  const std::optional<lab::sys::User> user = lab::sys::find_user(g_world->lab.share_user);
  ASSERT_TRUE(user.has_value());
  for (int version : {4, 3}) {
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(fmt::format("v{} {}", version, medium));
      auto s = connect(nfs_share(share("nfs", medium), version));
      uint64_t seed = 100 + version;
      for (uint64_t size : {kMB10, kMB100}) {
        const std::string rel = fmt::format("{}/v{}/w-{}.dat", run_, version, size);
        const std::string sent = put(*s, rel, size, ++seed);
        const std::string path = share_dir(medium) + "/" + rel;
        EXPECT_EQ(server_checksum(path), sent);
        EXPECT_EQ(on_server("stat -c %u " + shell_quote(path)).out,
                  std::to_string(user->uid) + "\n");
        auto props = s->properties();
        // What the driver sent is the share user's ids on this host.
        EXPECT_EQ(props.at("auth"), fmt::format("AUTH_SYS uid={} gid={}", user->uid, user->gid));
        EXPECT_EQ(props.at("version"), std::to_string(version));
        EXPECT_EQ(props.at("flight_op"), "write");
        EXPECT_GT(std::stoull(props.at("in_flight_bytes")), 0u);
        // NFSv4 too: WRITEs of the full request size (1 MiB by default), not
        // libnfs 4.0's ~3.8 KiB, and so no client limit on record.
        EXPECT_EQ(props.at("write_size_limit"), "none");
        EXPECT_EQ(std::stoull(props.at("request_size")), 1u << 20);
        EXPECT_GE(std::stoull(props.at("in_flight_bytes")), 2u << 20);
        // depth=auto (the default): chosen from the connection's round trip,
        // never below the minimum, and what the file kept out follows it.
        EXPECT_EQ(props.at("depth_option"), "auto");
        EXPECT_EQ(props.at("depth_chosen"), "auto");
        EXPECT_GT(std::stod(props.at("path_rtt_ms")), 0);
        EXPECT_GE(std::stoull(props.at("depth")), kNfsMinDepth);
        EXPECT_LE(std::stoull(props.at("in_flight_bytes")),
                  std::stoull(props.at("depth")) * std::stoull(props.at("request_size")));

        const std::string data = pattern(size, ++seed);
        const std::string rpath =
            share_dir(medium) + "/" + run_ + fmt::format("/v{}/r-{}.dat", version, size);
        ASSERT_EQ(on_server("cat > " + shell_quote(rpath), data).exit_code, 0);
        EXPECT_EQ(get(*s, fmt::format("{}/v{}/r-{}.dat", run_, version, size)), checksum_of(data));
        props = s->properties();
        EXPECT_EQ(props.at("flight_op"), "read");
        EXPECT_EQ(props.at("transport"), "tcp");
        // Several READs of request_size were on the wire at once.
        const uint64_t request = std::stoull(props.at("request_size"));
        EXPECT_GT(std::stoull(props.at("in_flight_bytes")), request);
        if (version == 3) {
          EXPECT_NE(props.at("rsize"), "unknown");
        }
        // Random reads (the sweep's) land where they are asked.
        auto f = s->open(fmt::format("{}/v{}/r-{}.dat", run_, version, size), Mode::kRead, 0);
        std::vector<char> buf(4096);
        const uint64_t at = size / 3;
        ASSERT_EQ(f->pread(buf.data(), buf.size(), at), buf.size());
        EXPECT_EQ(std::string(buf.data(), buf.size()), data.substr(at, buf.size()));
        f->close();

        s->remove(rel);
        EXPECT_NE(on_server("test -e " + shell_quote(path)).exit_code, 0);
      }
      // Random writes (the sweep's) land where they are asked.
      const std::string rel = fmt::format("{}/v{}/random.dat", run_, version);
      const std::string blocks = pattern(3 * 4096, 7);
      auto w = s->open(rel, Mode::kWrite, blocks.size());
      for (uint64_t at : {8192, 0, 4096}) w->pwrite(blocks.data() + at, 4096, at);
      w->close();
      EXPECT_EQ(server_checksum(share_dir(medium) + "/" + rel), checksum_of(blocks));
      // Into the driver's own WRITE buffers (write_buffer), in pieces that do
      // not line up with its requests and a size that ends mid-request.
      const std::string in_place = fmt::format("{}/v{}/in-place.dat", run_, version);
      const std::string sent_in_place = put_in_place(*s, in_place, kMB10 + 12345, 91, 300 << 10);
      EXPECT_EQ(server_checksum(share_dir(medium) + "/" + in_place), sent_in_place);
    }
    // Calls larger than libnfs takes in an answer (1 MiB): reads ask 1 MiB,
    // and what is read back is what was written.
    Share big = nfs_share(share("nfs", "ram"), version);
    big.options["request_size"] = "4MiB";
    auto b = connect(big);
    const std::string rel = fmt::format("{}/v{}/big-calls.dat", run_, version);
    const std::string sent = put(*b, rel, kMB10, 77);
    EXPECT_EQ(get(*b, rel), sent);
    EXPECT_EQ(b->properties().at("request_size"), std::to_string(1u << 20));
  }
}

// Configuration mistakes fail the connect as configuration errors; a
// closed server, a file the uid may not read, a read-only export and a
// missing file fail as I/O errors.
TEST_F(DriversLabTest, NfsBadExportPermissionDeniedReadOnlyAndMissingFile) {
  for (int version : {4, 3}) {
    SCOPED_TRACE(version);
    EXPECT_EQ(kind_of([&] { connect(nfs_share(share("nfs", "nosuch"), version)); }),
              ErrorKind::kConfig);
    // A file only root may read (the export squashes root, the share user is not root).
    const std::string secret = share_dir("ram") + "/" + run_ + "/secret.dat";
    ASSERT_EQ(on_server(fmt::format("mkdir -p {0} && chown {1}: {0} && echo x > {2} && "
                                    "chmod 600 {2}",
                                    shell_quote(share_dir("ram") + "/" + run_),
                                    g_world->lab.share_user, shell_quote(secret)))
                  .exit_code,
              0);
    auto s = connect(nfs_share(share("nfs", "ram"), version));
    EXPECT_EQ(kind_of([&] { get(*s, run_ + "/secret.dat"); }), ErrorKind::kIo);
    EXPECT_EQ(kind_of([&] { s->open(run_ + "/nothere.dat", Mode::kRead, 0); }), ErrorKind::kIo);
    auto ro = connect(nfs_share(share("nfs", lab::kReadOnlyShare), version));
    EXPECT_EQ(kind_of([&] { put(*ro, "x.dat", kMB10, 1); }), ErrorKind::kIo);
    EXPECT_NE(
        on_server("test -e " + shell_quote(lab::server_files(g_world->lab).ro_share + "/x.dat"))
            .exit_code,
        0);
  }
}

// Ganesha killed while a file streams in and another out: the read and the
// write fail with I/O errors within the timeout (no hang, no retry hiding
// it), a new connection is refused, and `lab up` brings the server back.
TEST_F(DriversLabTest, NfsServerStoppedMidTransfer) {
  if (!g_world->own) GTEST_SKIP() << "leaves a borrowed lab's servers alone";
  const std::string rel = run_ + "/big.dat";
  ASSERT_EQ(
      on_server(fmt::format("mkdir -p {0} && chown {1}: {0} && "
                            "head -c 200000000 /dev/zero > {0}/big.dat",
                            shell_quote(share_dir("ram") + "/" + run_), g_world->lab.share_user))
          .exit_code,
      0);
  Share sh = nfs_share(share("nfs", "ram"), 4);
  sh.options["timeout"] = "5s";
  auto s = connect(sh);
  auto f = s->open(rel, Mode::kRead, 0);
  std::vector<char> buf(kBlock);
  ASSERT_GT(f->read(buf.data(), buf.size()), 0u);
  // A write under way on a second session (NFSv4: the driver's own WRITEs).
  auto ws = connect(sh);
  auto w = ws->open(run_ + "/cut.dat", Mode::kWrite, 0);
  for (int i = 0; i < 8; ++i) w->write(buf.data(), buf.size());
  const int pid = g_world->lab.server.nfsd_pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  lab::sys::wait_exit({pid}, 5);
  const double start = monotonic_seconds();
  EXPECT_EQ(kind_of([&] {
              while (f->read(buf.data(), buf.size()) > 0) {
              }
            }),
            ErrorKind::kIo);
  EXPECT_EQ(kind_of([&] {
              for (int i = 0; i < 64; ++i) w->write(buf.data(), buf.size());
              w->close();
            }),
            ErrorKind::kIo);
  EXPECT_LT(monotonic_seconds() - start, 30);
  EXPECT_EQ(kind_of([&] { connect(sh); }), ErrorKind::kIo);
  w.reset();
  ws.reset();
  f.reset();
  s.reset();
  g_world->lab = lab::up(lab::LabOptions{}, g_world->lab.instance, g_world->lab.dir);
  EXPECT_NE(g_world->lab.server.nfsd_pid, pid);
  auto again = connect(sh);
  EXPECT_EQ(get(*again, rel), checksum_of(std::string(200000000, '\0')));
}

// --- path driver on this machine's own filesystems ----------------------------

class PathRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (mounts)";
    dir_ = fmt::format("/var/tmp/chokepoint-path-test-{}", getpid());
    fs::create_directories(dir_ + "/plain");
    fs::create_directories(dir_ + "/tiny");
    fs::create_directories(dir_ + "/ro");
    ASSERT_EQ(mount("cp-tiny", (dir_ + "/tiny").c_str(), "tmpfs", 0, "size=2m"), 0);
    ASSERT_EQ(mount("cp-ro", (dir_ + "/ro").c_str(), "tmpfs", MS_RDONLY, "size=1m"), 0);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    umount((dir_ + "/tiny").c_str());
    umount((dir_ + "/ro").c_str());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Session> connect(const std::string& sub) {
    Share s;
    s.url = dir_ + "/" + sub;
    return make_driver("path")->connect(s, cancel_);
  }
  std::string dir_;
  CancelToken cancel_;
};

TEST_F(PathRootTest, CopiesWithChecksumsAndReportsFullAndReadOnly) {
  auto s = connect("plain");
  for (uint64_t size : {kMB10, kMB100}) {
    const std::string rel = fmt::format("run/f-{}.dat", size);
    const std::string sent = put(*s, rel, size, size);
    EXPECT_EQ(get(*s, rel), sent);
    EXPECT_EQ(fs::file_size(dir_ + "/plain/" + rel), size);
    s->remove(rel);
  }
  auto tiny = connect("tiny");
  try {
    put(*tiny, "big.dat", kMB10, 1);
    ADD_FAILURE() << "a 10 MB file fit in 2 MiB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tiny->properties().at("fstype"), "tmpfs");
  auto ro = connect("ro");
  try {
    put(*ro, "x.dat", 10, 1);
    ADD_FAILURE() << "wrote to a read-only mount";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
}

// --- throttles (only on this test's own lab) ----------------------------------

std::string cgroup_of(pid_t pid, const std::string& controller) {
  std::ifstream in(fmt::format("/proc/{}/cgroup", pid));
  std::string line;
  while (std::getline(in, line)) {
    // "4:cpu:/chokepoint-lab-smbd"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1);
    if (("," + ctrls + ",").find("," + controller + ",") != std::string::npos) {
      return line.substr(b + 1);
    }
  }
  return {};
}

std::vector<pid_t> smbd_pids() {
  std::vector<pid_t> out;
  for (pid_t p : lab::sys::netns_pids(g_world->lab.server.netns)) {
    if (lab::sys::process_comm(p) == "smbd") out.push_back(p);
  }
  return out;
}

TEST_F(DriversLabTest, SmbdCpuQuotaCoversItsForkedChildren) {
  if (!g_world->own) GTEST_SKIP() << "leaves a borrowed lab's throttles alone";
  const lab::CgroupLayout layout = lab::cgroup_layout();
  const bool v1 = !layout.cpu_v1.empty();
  lab::ThrottleRequest req;
  req.smbd_cpu = 0.1;
  const lab::LabState st = lab::throttle(req, g_world->lab.instance, g_world->lab.dir);
  ASSERT_FALSE(st.throttle.cgroups.empty());
  const std::string cg = st.throttle.cgroups.front();
  const std::string rel_cg = cg.substr(lab::cgroup_root_of(cg).size());
  // A new session: smbd forks a child for it after the quota was set.
  const std::vector<pid_t> before = smbd_pids();
  auto s = connect(share("smb", "ram"));
  const std::vector<pid_t> after = smbd_pids();
  EXPECT_GT(after.size(), before.size()) << "no smbd child for the new session";
  for (pid_t p : after) EXPECT_EQ(cgroup_of(p, v1 ? "cpu" : ""), rel_cg) << "smbd pid " << p;
  const std::string sent = put(*s, run_ + "/cpu.dat", kMB100, 5);
  EXPECT_EQ(get(*s, run_ + "/cpu.dat"), sent);
  // The quota bit: the kernel throttled smbd at least once.
  std::ifstream stat(cg + "/cpu.stat");
  std::string key;
  uint64_t value = 0, throttled = 0;
  while (stat >> key >> value) {
    if (key == "nr_throttled") throttled = value;
  }
  EXPECT_GT(throttled, 0u) << "smbd was never throttled moving 200 MB at 10% of a core";
  s.reset();
  lab::ThrottleRequest clear;
  clear.clear = true;
  const lab::LabState cleared = lab::throttle(clear, g_world->lab.instance, g_world->lab.dir);
  EXPECT_TRUE(cleared.throttle.cgroups.empty());
  EXPECT_FALSE(fs::exists(cg));
  for (pid_t p : smbd_pids()) EXPECT_EQ(cgroup_of(p, v1 ? "cpu" : ""), "/") << "smbd pid " << p;
}

TEST_F(DriversLabTest, DiskReadLimitSlowsTheDiskShare) {
  if (!g_world->own) GTEST_SKIP() << "leaves a borrowed lab's throttles alone";
  lab::ThrottleRequest req;
  req.disk_read_bps = 20'000'000;
  const lab::LabState st = lab::throttle(req, g_world->lab.instance, g_world->lab.dir);
  ASSERT_FALSE(st.throttle.cgroups.empty());
  for (const std::string protocol : {"ftp", "smb"}) {
    SCOPED_TRACE(protocol);
    // 40 MB written around the page cache (O_DIRECT, by a process outside
    // the throttled cgroup), so reading it must come from the disk.
    const std::string rel = run_ + "/" + protocol + "-slow.dat";
    RunResult r = on_server(fmt::format(
        "mkdir -p {0} && dd if=/dev/urandom of={1} bs=1M count=40 "
        "oflag=direct status=none && chmod 644 {1}",
        shell_quote(share_dir("disk") + "/" + run_), shell_quote(share_dir("disk") + "/" + rel)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto s = connect(share(protocol, "disk"));
    const double t0 = monotonic_seconds();
    const std::string got = get(*s, rel);
    const double seconds = monotonic_seconds() - t0;
    EXPECT_EQ(got, server_checksum(share_dir("disk") + "/" + rel));
    // 41.9 MB at 20 MB/s takes 2 s; a lower bound holds on any machine.
    EXPECT_GT(seconds, 1.5) << "the read limit did not hold";
  }
  lab::ThrottleRequest clear;
  clear.clear = true;
  EXPECT_TRUE(
      lab::throttle(clear, g_world->lab.instance, g_world->lab.dir).throttle.cgroups.empty());
}

}  // namespace
}  // namespace cp::transfer
