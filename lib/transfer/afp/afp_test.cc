#include "transfer/afp/afp.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/testing/afp_capture.h"
#include "transfer/afp/testing/afp_replay_peer.h"
#include "transfer/afp/testing/afp_test_server.h"
#include "transfer/driver.h"
#include "transfer/files_pass.h"
#include "transfer/testing/error_of.h"
#include "transfer/testing/files_pass_checks.h"
#include "transfer/testing/loopback.h"
#include "transfer/testing/pcap.h"

namespace cp::transfer::afp {
namespace {

namespace fs = std::filesystem;
using testing::AfpTestServer;
using testing::ReplayPeer;
using testing::TestServerConfig;

using testing::error_of;

// --- URL, options, error texts ------------------------------------------------

// Each URL form and every field it parses to: user, UAM, host, port, volume, dir.
TEST(AfpUrl, Forms) {
  const std::pair<const char*, AfpUrl> cases[] = {
      {"afp://alice;AUTH=DHX2@nas.example:1548/Data/runs/x",
       {"alice", "DHX2", "nas.example", 1548, "Data", "runs/x"}},
      {"afp://bob;auth=Cleartxt%20Passwrd@10.0.0.2/My%20Vol/",
       {"bob", "Cleartxt Passwrd", "10.0.0.2", 548, "My Vol", ""}},
      {"afp://;AUTH=No%20User%20Authent@[::1]/tmpvol",
       {"", "No User Authent", "::1", 548, "tmpvol", ""}},
      {"afp://nas/vol", {"", "", "nas", 548, "vol", ""}},
  };
  for (const auto& [url, want] : cases) {
    const AfpUrl u = parse_afp_url(url);
    EXPECT_EQ(std::tie(u.user, u.uam, u.host, u.port, u.volume, u.dir),
              std::tie(want.user, want.uam, want.host, want.port, want.volume, want.dir))
        << url;
  }
  EXPECT_EQ(parse_afp_url("afp://u;AUTH=dhx@h/v").uam, "DHCAST128");

  EXPECT_NE(error_of([] { parse_afp_url("afp://nas"); }, ErrorKind::kConfig).find("no volume"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_afp_url("smb://nas/v"); }, ErrorKind::kConfig).find("afp://"),
            std::string::npos);
  const std::string pw =
      error_of([] { parse_afp_url("afp://u:hunter2@nas/v"); }, ErrorKind::kConfig);
  EXPECT_NE(pw.find("carries a password"), std::string::npos);
  EXPECT_EQ(pw.find("hunter2"), std::string::npos);  // never echoed
  error_of([] { parse_afp_url("afp://u;AUTH=Kerberos@nas/v"); }, ErrorKind::kConfig);
  error_of([] { parse_afp_url("afp://nas/v/../etc"); }, ErrorKind::kConfig);
}

TEST(AfpOptions, DefaultsBoundsAndUnknownKeys) {
  const AfpOptions d = parse_afp_options({});
  EXPECT_EQ(d.depth, 8u);
  EXPECT_EQ(d.request_size, 0u);
  const AfpOptions o = parse_afp_options({{"depth", "16"},
                                          {"request_size", "256KiB"},
                                          {"timeout", "30s"},
                                          {"connect_timeout", "2"},
                                          {"tickle_interval", "10s"}});
  EXPECT_EQ(o.depth, 16u);
  EXPECT_EQ(o.request_size, 256u << 10);
  EXPECT_EQ(o.timeout_s, 30);
  EXPECT_EQ(o.connect_timeout_s, 2);
  EXPECT_EQ(o.tickle_s, 10);
  EXPECT_EQ(d.uam, "");  // auto
  EXPECT_EQ(parse_afp_options({{"uam", "cleartxt"}}).uam, "Cleartxt Passwrd");
  EXPECT_EQ(parse_afp_options({{"uam", "auto"}}).uam, "");
  error_of([] { parse_afp_options({{"uam", "kerberos"}}); }, ErrorKind::kConfig);
  for (const char* bad : {"0", "65", "x", "-1", ""}) {
    error_of([&] { parse_afp_options({{"depth", bad}}); }, ErrorKind::kConfig);
  }
  error_of([] { parse_afp_options({{"request_size", "1k"}}); }, ErrorKind::kConfig);
  error_of([] { parse_afp_options({{"timeout", "0s"}}); }, ErrorKind::kConfig);
  EXPECT_NE(error_of(
                [] {
                  parse_afp_options({{"dpeth", "4"}});
                },
                ErrorKind::kConfig)
                .find("unknown afp share option 'dpeth'"),
            std::string::npos);
}

TEST(AfpErrors, ResultCodesReadClearly) {
  const Where w{"nas:548", "Data", "alice", "run/a.dat"};
  struct Case {
    int32_t code;
    uint8_t command;
    ErrorKind kind;
    const char* text;
  };
  const Case cases[] = {
      {kFPUserNotAuth, kFPLogin, ErrorKind::kConfig,
       "bad login: AFP server nas:548 refused user 'alice'"},
      {kFPUserNotAuth, kFPLoginCont, ErrorKind::kConfig, "bad login"},
      {kFPParamErr, kFPLoginCont, ErrorKind::kConfig, "bad login"},
      {kFPBadUAM, kFPLogin, ErrorKind::kConfig, "does not accept the login method"},
      {kFPObjectNotFound, kFPOpenVol, ErrorKind::kConfig,
       "no such volume: AFP server nas:548 has no volume 'Data'"},
      {kFPParamErr, kFPOpenVol, ErrorKind::kConfig, "no such volume"},
      {kFPAccessDenied, kFPOpenFork, ErrorKind::kIo,
       "access denied: user 'alice' may not use afp://nas:548/Data/run/a.dat"},
      {kFPAccessDenied, kFPDelete, ErrorKind::kIo, "may not delete"},
      {kFPDiskFull, kFPWriteExt, ErrorKind::kIo, "disk full: volume 'Data' on AFP server nas:548"},
      {kFPObjectNotFound, kFPGetFileDirParms, ErrorKind::kIo,
       "object not found: afp://nas:548/Data/run/a.dat does not exist"},
      {kFPObjectNotFound, kFPCreateFile, ErrorKind::kIo, "its directory does not exist"},
      {kFPCallNotSupported, kFPReadExt, ErrorKind::kUnsupported, "does not support FPReadExt"},
      {kFPVolLocked, kFPCreateFile, ErrorKind::kIo, "read-only"},
      {kFPFileBusy, kFPDelete, ErrorKind::kIo, "busy"},
      {kFPMiscErr, kFPFlushFork, ErrorKind::kIo,
       "FPFlushFork on afp://nas:548/Data/run/a.dat failed: kFPMiscErr (-5014)"},
  };
  for (const auto& c : cases) {
    const Error e = afp_error(c.code, c.command, w);
    EXPECT_EQ(e.kind(), c.kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.text), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(c.code)), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
  EXPECT_NE(std::string(afp_error(kFPUserNotAuth, kFPLogin, Where{"s", "v", "", ""}).what())
                .find("the guest login"),
            std::string::npos);
}

TEST(AfpDriver, IsRegistered) {
  const auto& names = driver_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "afp"), names.end());
  auto d = make_driver("afp");
  EXPECT_EQ(d->name(), "afp");
  EXPECT_TRUE(driver_spec(d->name()).caps.random_access);
  EXPECT_TRUE(driver_spec("afp").caps.write);
}

// --- Against replayed captures ----------------------------------------------------

std::string vector_file(const std::string& name) {
  return testing::read_file(testing::afp_vectors_dir() + "/" + name);
}

std::string read_all(File& f, size_t chunk) {
  std::string out;
  std::vector<char> buf(chunk);
  while (size_t n = f.read(buf.data(), buf.size())) out.append(buf.data(), n);
  return out;
}

// The error of `kind` that reading file `name` whole, `chunk` bytes a call, ends in.
std::string read_error(Session& session, const std::string& name, size_t chunk, ErrorKind kind) {
  return error_of(
      [&] {
        auto f = session.open(name, Mode::kRead, 0);
        read_all(*f, chunk);
      },
      kind);
}

void write_in_pieces(File& f, const std::string& data, size_t piece) {
  for (size_t at = 0; at < data.size(); at += piece) {
    f.write(data.data() + at, std::min(piece, data.size() - at));
  }
}

struct ReplayCase {
  const char* capture;
  const char* url;  // %d: the peer's port
  const char* password;
  const char* upload;
  std::vector<std::string> synthesized;
};

// The driver reads and writes through a peer that answers only with the
// real server's captured replies, and only to requests byte-identical to
// the real client's (afpcmd's); FPFlushFork (afpcmd sends none) and, for
// diskvol, FPCloseVol are answered with netatalk's empty success.
class AfpReplay : public ::testing::TestWithParam<ReplayCase> {};

TEST_P(AfpReplay, ReadsAndWritesTheCapturedFilesWithTheCapturedBytes) {
  const ReplayCase& c = GetParam();
  std::vector<testing::CapturedConnection> captured = testing::load_afp_capture(c.capture);
  // The clean close (FPCloseVol, FPLogout, DSICloseSession) comes from the speedtest.
  for (auto& s : testing::load_afp_capture("afp_speedtest_clrtxt_tmpvol_read1MB.pcap")) {
    captured.push_back(std::move(s));
  }
  ReplayPeer peer(captured, {kFPFlushFork, kFPCloseVol});
  Share share;
  share.url = fmt::format(fmt::runtime(c.url), peer.port());
  share.password = c.password;
  CancelToken cancel;
  {
    auto session = make_driver("afp")->connect(share, cancel);
    const auto props = session->properties();
    EXPECT_EQ(props.at("afp_version"), "AFP3.4");
    EXPECT_EQ(props.at("server_name"), "AFPTEST");
    EXPECT_EQ(props.at("machine_type"), "Netatalk4.4.0");
    EXPECT_EQ(props.at("quantum"), "1048576");
    EXPECT_EQ(props.at("request_size"), "1048576");

    auto in = session->open("pattern100k.bin", Mode::kRead, 0);
    EXPECT_EQ(read_all(*in, 10000), vector_file("pattern100k.bin"));
    in->close();

    auto out = session->open(c.upload, Mode::kWrite, 65536);
    write_in_pieces(*out, vector_file("upload64k.bin"), 5000);
    out->close();
  }
  const ReplayPeer::Report r = peer.report_after(2);
  EXPECT_TRUE(r.unmatched.empty()) << "first unmatched: " << r.unmatched.front();
  EXPECT_EQ(r.synthesized, c.synthesized);
  EXPECT_EQ(r.connections, 2u);  // status, session
  // The upload went out as afpcmd's single DSIWrite, byte for byte.
  EXPECT_NE(std::find(r.log.begin(), r.log.end(), "DSIWrite FPWriteExt: captured"), r.log.end());
  EXPECT_EQ(r.log.back(), "DSICloseSession: end");
}

INSTANTIATE_TEST_SUITE_P(
    Captures, AfpReplay,
    ::testing::Values(ReplayCase{"afp_guest_tmpvol.pcap",
                                 "afp://127.0.0.1:{}/tmpvol",
                                 "",
                                 "guest_upload64k.bin",
                                 {"FPFlushFork"}},
                      ReplayCase{"afp_clrtxt_afpuser_diskvol.pcap",
                                 "afp://afpuser;AUTH=Cleartxt%20Passwrd@127.0.0.1:{}/diskvol",
                                 "afppass",
                                 "clrtxt_upload64k.bin",
                                 {"FPFlushFork", "FPCloseVol"}}));

TEST(AfpReplayErrors, AWrongPasswordIsABadLogin) {
  // The clrtxt capture holds only the right password: a wrong one goes
  // unmatched, so the peer drops the connection; the driver says so.
  ReplayPeer peer(testing::load_afp_capture("afp_clrtxt_afpuser_diskvol.pcap"));
  Share share;
  share.url = fmt::format("afp://afpuser;AUTH=clrtxt@127.0.0.1:{}/diskvol", peer.port());
  share.password = "wrong";
  CancelToken cancel;
  EXPECT_NE(error_of([&] { make_driver("afp")->connect(share, cancel); }, ErrorKind::kRemote)
                .find("closed the connection"),
            std::string::npos);
  EXPECT_EQ(peer.report().unmatched.size(), 1u);
}

// --- Against the test server ------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "afp-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  void put(const std::string& rel, const std::string& data) const {
    fs::create_directories(fs::path(path_ + "/" + rel).parent_path());
    std::ofstream(path_ + "/" + rel, std::ios::binary) << data;
  }
  std::string get(const std::string& rel) const { return testing::read_file(path_ + "/" + rel); }
  bool has(const std::string& rel) const { return fs::exists(path_ + "/" + rel); }

 private:
  std::string path_;
};

std::string pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

struct Served {
  explicit Served(TestServerConfig cfg = {}) {
    if (cfg.volumes.empty()) cfg.volumes = {{"diskvol", other.path()}, {"vol", dir.path()}};
    if (cfg.users.empty()) cfg.users = {{"alice", "s3cret"}};
    server = std::make_unique<AfpTestServer>(cfg);
  }
  Share share(const std::string& userinfo, const std::string& password = "s3cret",
              const std::string& path = "vol") const {
    Share s;
    s.url = fmt::format("afp://{}127.0.0.1:{}/{}", userinfo, server->port(), path);
    s.password = password;
    return s;
  }
  std::unique_ptr<Session> connect(const Share& s) const {
    CancelToken cancel;
    return make_driver("afp")->connect(s, cancel);
  }
  TempDir dir, other;
  std::unique_ptr<AfpTestServer> server;
};

TEST(AfpDriver, LogsInWithEveryUam) {
  struct Case {
    std::string userinfo;
    std::string uam;
  };
  for (const Case& c :
       {Case{"alice@", "DHX2"}, Case{"alice;AUTH=DHCAST128@", "DHCAST128"},
        Case{"alice;AUTH=clrtxt@", "Cleartxt Passwrd"}, Case{"", "No User Authent"}}) {
    SCOPED_TRACE(c.uam);
    Served s;
    s.dir.put("f", "data");
    {
      auto session = s.connect(s.share(c.userinfo));
      EXPECT_EQ(session->properties().at("uam"), c.uam);
      auto f = session->open("f", Mode::kRead, 0);
      EXPECT_EQ(read_all(*f, 100), "data");
      f->close();
    }
    const auto st = s.server->stats_after(2);
    EXPECT_EQ(st.uam, c.uam);
    EXPECT_EQ(st.version, "AFP3.4");
    EXPECT_TRUE(st.logged_out);
    EXPECT_TRUE(st.closed_session);
    EXPECT_NE(std::find(st.commands.begin(), st.commands.end(), "FPCloseVol"), st.commands.end());
    if (!c.userinfo.empty()) {
      // The same login with a wrong password.
      EXPECT_NE(error_of([&] { s.connect(s.share(c.userinfo, "wrong")); }, ErrorKind::kConfig)
                    .find("bad login"),
                std::string::npos);
    }
  }
}

// A server whose only password UAM is Cleartxt Passwrd: the driver refuses
// before any login request leaves (the password is never sent), naming the
// option; with options uam=cleartxt it logs in that way.
TEST(SecurityAfpDriver, CleartextOnlyServerIsRefusedUnlessTheShareAllowsIt) {
  TestServerConfig cfg;
  cfg.uams = {"Cleartxt Passwrd", "No User Authent"};
  {
    Served s(cfg);
    error_of([&] { s.connect(s.share("alice@")); }, ErrorKind::kConfig);
    const auto st = s.server->stats_after(1);
    EXPECT_EQ(st.connections, 1u);  // the status connection only
    EXPECT_EQ(std::count(st.commands.begin(), st.commands.end(), "FPLogin"), 0);
    EXPECT_EQ(st.uam, "");
  }
  {
    Served s(cfg);
    s.dir.put("f", "data");
    Share share = s.share("alice@");
    share.options = {{"uam", "cleartxt"}};
    {
      auto session = s.connect(share);
      EXPECT_EQ(session->properties().at("uam"), "Cleartxt Passwrd");
      auto f = session->open("f", Mode::kRead, 0);
      EXPECT_EQ(read_all(*f, 100), "data");
      f->close();
    }
    EXPECT_EQ(s.server->stats_after(2).uam, "Cleartxt Passwrd");
    // The URL and the options naming two UAMs is a config error.
    Share both = s.share("alice;AUTH=DHX2@");
    both.options = {{"uam", "cleartxt"}};
    error_of([&] { s.connect(both); }, ErrorKind::kConfig);
  }
}

TEST(AfpDriver, UserFromTheShareOverridesTheUrl) {
  Served s;
  Share share = s.share("mallory;AUTH=DHX2@");
  share.user = "alice";
  EXPECT_EQ(s.connect(share)->properties().at("uam"), "DHX2");
  share.user = "";
  EXPECT_NE(error_of([&] { s.connect(share); }, ErrorKind::kConfig).find("user 'mallory'"),
            std::string::npos);
}

TEST(AfpDriver, ARequestSizeAboveTheQuantumIsRecordedNotSilentlyClamped) {
  Served s;  // quantum 1 MiB
  Share share = s.share("alice@");
  share.options = {{"request_size", "4MiB"}};
  auto session = s.connect(share);
  const auto props = session->properties();
  EXPECT_EQ(props.at("request_size"), "1048576");
  EXPECT_EQ(props.at("request_size_asked"), "4194304");
  // Within the quantum, nothing to say.
  share.options = {{"request_size", "64KiB"}};
  EXPECT_EQ(s.connect(share)->properties().count("request_size_asked"), 0u);
}

TEST(AfpDriver, PipelinesReadsAndWritesToTheConfiguredDepth) {
  // The server holds FPReadExt/FPWriteExt replies until `depth` requests are
  // waiting: it sees exactly `depth` in flight, in batches it answers last
  // first.
  TestServerConfig cfg;
  cfg.hold = 4;
  cfg.reverse_held = true;
  Served s(cfg);
  const std::string data = pattern(32 * 65536, 1);  // 8 batches of 4 requests
  s.dir.put("in.bin", data);
  Share share = s.share("alice@");
  share.options = {{"depth", "4"}, {"request_size", "64KiB"}};
  {
    auto session = s.connect(share);
    EXPECT_EQ(session->properties().at("depth"), "4");
    EXPECT_EQ(session->properties().at("request_size"), "65536");
    auto in = session->open("in.bin", Mode::kRead, 0);
    EXPECT_TRUE(read_all(*in, 100000) == data);
    in->close();
    EXPECT_EQ(s.server->stats().max_held, 4u);
    auto out = session->open("out.bin", Mode::kWrite, data.size());
    write_in_pieces(*out, data, 100000);
    out->close();
  }
  EXPECT_TRUE(s.dir.get("out.bin") == data);
  const auto st = s.server->stats_after(2);
  EXPECT_EQ(st.max_held, 4u);
  EXPECT_EQ(st.read_counts, std::vector<uint64_t>(32, 65536));
  EXPECT_EQ(st.write_counts, std::vector<uint64_t>(32, 65536));
  // close() flushed before closing the fork.
  auto flush = std::find(st.commands.begin(), st.commands.end(), "FPFlushFork");
  ASSERT_NE(flush, st.commands.end());
  EXPECT_EQ(*(flush + 1), "FPCloseFork");
}

TEST(AfpDriver, KeepsDepthRequestsInFlightOnADelayedPath) {
  // Each reply leaves the server 20 ms after its request came, as over a
  // 20 ms round trip: the client must have sent `depth` requests before the
  // first answer, and it records what it kept in flight.
  for (const unsigned depth : {1u, 8u}) {
    SCOPED_TRACE(depth);
    TestServerConfig cfg;
    cfg.reply_delay_ms = 20;
    Served s(cfg);
    const std::string data = pattern(24 * 65536 + 100, 5);
    s.dir.put("in.bin", data);
    Share share = s.share("alice@");
    share.options = {{"depth", std::to_string(depth)}, {"request_size", "64KiB"}};
    auto session = s.connect(share);
    auto in = session->open("in.bin", Mode::kRead, 0);
    EXPECT_TRUE(read_all(*in, 1 << 20) == data);
    in->close();
    auto props = session->properties();
    EXPECT_EQ(props.at("flight_op"), "read");
    EXPECT_EQ(props.at("requests_in_flight"), std::to_string(depth));
    EXPECT_EQ(props.at("in_flight_bytes"), std::to_string(depth * 65536));
    EXPECT_EQ(s.server->stats().max_in_flight, depth);
    auto out = session->open("out.bin", Mode::kWrite, data.size());
    write_in_pieces(*out, data, 1 << 20);
    out->close();
    EXPECT_TRUE(s.dir.get("out.bin") == data);
    props = session->properties();
    EXPECT_EQ(props.at("flight_op"), "write");
    EXPECT_EQ(props.at("requests_in_flight"), std::to_string(depth));
    EXPECT_EQ(s.server->stats().max_in_flight, depth);
  }
}

TEST(AfpDriver, NeverExceedsTheDepth) {
  // The server would hold more than the client may send: it answers only
  // when the client goes quiet, and sees at most `depth` waiting.
  TestServerConfig cfg;
  cfg.hold = 100;
  cfg.hold_idle_ms = 200;
  Served s(cfg);
  const std::string data = pattern(6 * 65536 + 1000, 2);
  s.dir.put("in.bin", data);
  Share share = s.share("alice@");
  share.options = {{"depth", "3"}, {"request_size", "64KiB"}};
  auto session = s.connect(share);
  auto in = session->open("in.bin", Mode::kRead, 0);
  EXPECT_TRUE(read_all(*in, 65536) == data);
  in->close();
  EXPECT_EQ(s.server->stats().max_held, 3u);
}

TEST(AfpDriver, RandomAccessAndShortFiles) {
  Served s;
  const std::string data = pattern(300000, 3);
  s.dir.put("sub/r.bin", data);
  Share share = s.share("alice@");
  share.options = {{"request_size", "16KiB"}, {"depth", "3"}};
  auto session = s.connect(share);
  auto f = session->open("sub/r.bin", Mode::kRead, 0);
  std::vector<char> buf(100000);
  EXPECT_EQ(f->pread(buf.data(), 100000, 12345), 100000u);
  EXPECT_EQ(std::string(buf.data(), 100000), data.substr(12345, 100000));
  // Across the end: what there is.
  EXPECT_EQ(f->pread(buf.data(), 100000, 250000), 50000u);
  EXPECT_EQ(std::string(buf.data(), 50000), data.substr(250000));
  EXPECT_EQ(f->pread(buf.data(), 10, 400000), 0u);
  // Sequential reads still work beside it.
  EXPECT_TRUE(read_all(*f, 7777) == data);
  f->close();
  s.dir.put("empty", "");
  auto e = session->open("empty", Mode::kRead, 0);
  EXPECT_EQ(read_all(*e, 10), "");
  e->close();
}

TEST(AfpDriver, WritesReplaceRemoveDeletesAndDirectoriesWork) {
  Served s;
  s.dir.put("runs/old.bin", std::string(5000, 'o'));
  // The URL's directory is the root of the paths.
  auto session = s.connect(s.share("alice@", "s3cret", "vol/runs"));
  {
    auto f = session->open("old.bin", Mode::kWrite, 3);
    f->write("new", 3);
    f->close();
  }
  EXPECT_EQ(s.dir.get("runs/old.bin"), "new");  // replaced, not overwritten in place
  session->remove("old.bin");
  EXPECT_FALSE(s.dir.has("runs/old.bin"));
  EXPECT_NE(error_of([&] { session->remove("old.bin"); }, ErrorKind::kIo).find("object not found"),
            std::string::npos);
}

// stat (FPGetFileDirParms), mkdir (FPCreateDir) and rmdir (FPDelete)
// against the AFP test server, then a whole small-file pass that leaves the
// volume as it found it.
TEST(AfpDriver, StatsMakesAndRemovesDirectoriesAndRunsASmallFilePass) {
  Served s;
  s.dir.put("runs/a.bin", std::string(5000, 'a'));
  auto session = s.connect(s.share("alice@", "s3cret", "vol/runs"));
  const FileInfo a = session->stat("a.bin");
  EXPECT_EQ(a.size, 5000u);
  EXPECT_FALSE(a.is_dir);
  EXPECT_NEAR(double(a.mtime), double(::time(nullptr)), 120);
  session->mkdir("sub");
  EXPECT_TRUE(fs::is_directory(s.dir.path() + "/runs/sub"));
  EXPECT_TRUE(session->stat("sub").is_dir);
  EXPECT_NE(error_of([&] { session->mkdir("sub"); }, ErrorKind::kIo), "");
  session->rmdir("sub");
  EXPECT_FALSE(fs::exists(s.dir.path() + "/runs/sub"));
  EXPECT_NE(error_of([&] { session->stat("sub"); }, ErrorKind::kIo).find("object not found"),
            std::string::npos);

  FilesPassOptions o;
  o.tree = {.count = 40, .size = 3000, .dirs = 4};
  o.root = "pass";
  o.budget_s = 0;
  o.in_flight = 4;  // on the one DSI connection
  CancelToken cancel;
  const FilesPassResult r = run_files_pass(*session, nullptr, driver_spec("afp"), o, cancel);
  EXPECT_EQ(r.in_flight, 4u);
  for (const auto& p : r.phases) {
    EXPECT_LE(p.in_flight_max, 4u);
    SCOPED_TRACE(std::string(files::phase_name(p.phase)));
    EXPECT_EQ(p.ops, 40u);
    EXPECT_TRUE(p.error.empty()) << p.error;
    EXPECT_TRUE(p.skipped.empty()) << p.skipped;
    EXPECT_LE(p.latency.median_us, p.latency.p99_us);
    EXPECT_LE(p.latency.p99_us, p.latency.max_us);
  }
  EXPECT_EQ(r.phases[2].bytes, 40u * 3000);
  EXPECT_FALSE(fs::exists(s.dir.path() + "/runs/pass"));
}

// Over a path with a round trip (the server's replies leave 10 ms after
// their requests), the pass keeps 8 files' chains in flight on the one DSI
// connection: no other session is opened, every phase overlaps its
// operations, every file is written whole (in several requests when larger
// than one), read back and checked, and the tree is gone at the end.
TEST(AfpDriver, KeepsSmallFileOperationsInFlightOnItsOneConnection) {
  for (const auto& [size, request] : {std::pair<uint64_t, const char*>{3000, "64KiB"},
                                      std::pair<uint64_t, const char*>{40000, "16KiB"}}) {
    SCOPED_TRACE(size);
    TestServerConfig cfg;
    cfg.reply_delay_ms = 10;
    Served s(cfg);
    s.dir.put("runs/keep.bin", "k");
    Share share = s.share("alice@", "s3cret", "vol/runs");
    share.options = {{"request_size", request}};
    auto session = s.connect(share);
    FilesPassOptions o;
    o.tree = {.count = 48, .size = size, .dirs = 4};
    o.root = "pass";
    o.budget_s = 0;
    o.in_flight = 8;
    CancelToken cancel;
    int opened = 0;
    const FilesPassResult r = run_files_pass(
        *session,
        [&] {
          ++opened;
          return s.connect(share);
        },
        driver_spec("afp"), o, cancel);
    EXPECT_EQ(opened, 0);
    EXPECT_EQ(r.created, 48u);
    transfer::testing::expect_every_file_done(r, 48, size, 8);
    for (const auto& p : r.phases) {
      SCOPED_TRACE(std::string(files::phase_name(p.phase)));
      EXPECT_GT(p.in_flight_max, 1u);
      EXPECT_GT(p.in_flight_mean, 1.0);
    }
    EXPECT_EQ(r.phases[0].bytes, 48u * size);
    EXPECT_GT(s.server->stats().max_in_flight, 1u);  // FPReadExt/FPWriteExt of several files
    EXPECT_TRUE(r.leftover.empty()) << r.leftover;
    EXPECT_FALSE(fs::exists(s.dir.path() + "/runs/pass"));
    EXPECT_TRUE(s.dir.has("runs/keep.bin"));  // nothing of the volume's own touched
  }
}

// A file the server refuses while others are in flight: the create phase
// stops with the server's error, the operations out beside it end, and the
// pass removes everything it made.
TEST(AfpDriver, ARefusedFileAmongThoseInFlightStopsThePhaseAndLeavesNothing) {
  FilesPassOptions o;
  o.tree = {.count = 40, .size = 2000, .dirs = 4};
  o.root = "pass";
  o.budget_s = 0;
  o.in_flight = 8;
  TestServerConfig cfg;
  cfg.reply_delay_ms = 5;
  cfg.deny = {"runs/pass/" + o.tree.file_path(21)};
  Served s(cfg);
  s.dir.put("runs/keep.bin", "k");
  auto session = s.connect(s.share("alice@", "s3cret", "vol/runs"));
  CancelToken cancel;
  const FilesPassResult r = run_files_pass(*session, nullptr, driver_spec("afp"), o, cancel);
  const files::PhaseStats& create = r.phases[0];
  EXPECT_FALSE(create.error.empty());
  EXPECT_LT(create.ops, 40u);
  EXPECT_TRUE(r.leftover.empty()) << r.leftover;
  EXPECT_FALSE(fs::exists(s.dir.path() + "/runs/pass"));
}

TEST(AfpDriver, FileErrorsAreClear) {
  TestServerConfig cfg;
  cfg.deny = {"secret.bin"};
  cfg.disk_full_after = 100000;
  Served s(cfg);
  s.dir.put("secret.bin", "x");
  fs::create_directories(s.dir.path() + "/adir");
  auto session = s.connect(s.share("alice@"));
  struct Refused {
    const char* name;
    Mode mode;
    const char* says;
  };
  for (const Refused& r : {Refused{"missing.bin", Mode::kRead, "object not found"},
                           Refused{"adir", Mode::kRead, "is a directory"},
                           Refused{"secret.bin", Mode::kRead, "access denied"},
                           Refused{"nodir/a.bin", Mode::kWrite, "directory does not exist"}}) {
    const std::string msg = error_of([&] { session->open(r.name, r.mode, 0); }, ErrorKind::kIo);
    EXPECT_NE(msg.find(r.says), std::string::npos) << r.name << ": " << msg;
  }
  EXPECT_THROW(session->open("../escape", Mode::kWrite, 0), Error);
  // A full disk fails the write (or, at the latest, the close) and names the volume.
  const std::string msg = error_of(
      [&] {
        auto f = session->open("big.bin", Mode::kWrite, 300000);
        write_in_pieces(*f, pattern(300000, 4), 65536);
        f->close();
      },
      ErrorKind::kIo);
  EXPECT_NE(msg.find("disk full: volume 'vol'"), std::string::npos) << msg;
  // A write that fails mid-file fails every later write and the close.
  {
    Share share = s.share("alice@");
    share.options = {{"request_size", "64KiB"}, {"depth", "1"}};
    auto small = s.connect(share);
    auto f = small->open("big2.bin", Mode::kWrite, 300000);
    const std::string data = pattern(300000, 4);
    EXPECT_NE(error_of([&] { write_in_pieces(*f, data, 65536); }, ErrorKind::kIo).find("disk full"),
              std::string::npos);
    EXPECT_NE(error_of([&] { f->write(data.data(), 10); }, ErrorKind::kIo).find("earlier write"),
              std::string::npos);
    EXPECT_NE(error_of([&] { f->close(); }, ErrorKind::kIo).find("earlier write"),
              std::string::npos);
  }
  // The session survives a failed file.
  auto ok = session->open("small.bin", Mode::kWrite, 10);
  ok->write("0123456789", 10);
  ok->close();
  EXPECT_EQ(s.dir.get("small.bin"), "0123456789");
}

TEST(AfpDriver, VolumeAndServerErrors) {
  Served s;
  EXPECT_NE(error_of([&] { s.connect(s.share("alice@", "s3cret", "nosuch")); }, ErrorKind::kConfig)
                .find("no such volume"),
            std::string::npos);
  {
    // It said goodbye: netatalk keeps a dropped client's afpd for 24 h.
    const auto st = s.server->stats_after(2);
    EXPECT_TRUE(st.logged_out);
    EXPECT_TRUE(st.closed_session);
  }
  TestServerConfig old;
  old.versions = {"AFPVersion 2.1", "AFP2.2"};
  Served s2(old);
  EXPECT_NE(error_of([&] { s2.connect(s2.share("alice@")); }, ErrorKind::kUnsupported)
                .find("speaks only AFPVersion 2.1, AFP2.2"),
            std::string::npos);
  TestServerConfig noguest;
  noguest.uams = {"DHX2"};
  Served s3(noguest);
  EXPECT_NE(error_of([&] { s3.connect(s3.share("")); }, ErrorKind::kConfig).find("no guest"),
            std::string::npos);
}

TEST(AfpDriver, RefusedPortNamesHostAndPort) {
  const uint16_t port = testing::closed_loopback_port();
  Share share;
  share.url = fmt::format("afp://127.0.0.1:{}/vol", port);
  CancelToken cancel;
  EXPECT_NE(error_of([&] { make_driver("afp")->connect(share, cancel); }, ErrorKind::kRemote)
                .find(fmt::format("127.0.0.1:{} refused the connection", port)),
            std::string::npos);
}

TEST(AfpDriver, AnswersTicklesAndAcknowledgesAttentions) {
  TestServerConfig cfg;
  cfg.tickle_every = 2;
  Served s(cfg);
  s.dir.put("f", pattern(200000, 5));
  {
    Share share = s.share("alice@");
    share.options = {{"request_size", "16KiB"}};
    auto session = s.connect(share);
    auto f = session->open("f", Mode::kRead, 0);
    EXPECT_EQ(read_all(*f, 5000).size(), 200000u);
    f->close();
  }
  EXPECT_GT(s.server->stats_after(2).tickles_received, 5u);

  TestServerConfig shut;
  shut.attention_after = 7;  // during the session: after FPGetFileDirParms
  Served s2(shut);
  s2.dir.put("f", "data");
  auto session = s2.connect(s2.share("alice@"));
  const std::string msg = read_error(*session, "f", 10, ErrorKind::kRemote);
  EXPECT_NE(msg.find("is shutting down"), std::string::npos) << msg;
  session.reset();
  EXPECT_EQ(s2.server->stats_after(2).attention_acks, 1u);
}

TEST(AfpDriver, TicklesWhileIdle) {
  Served s;
  Share share = s.share("alice@");
  share.options = {{"tickle_interval", "100ms"}};
  auto session = s.connect(share);
  // Idle: the session's own thread keeps the server hearing from it. (Waits
  // for the count, up to 20 s; asserts nothing about timing.)
  for (int i = 0; i < 200 && s.server->stats().tickles_received < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(s.server->stats().tickles_received, 3u);
}

TEST(AfpDriver, ADroppedConnectionFailsTheTransfer) {
  TestServerConfig cfg;
  cfg.drop_after = 10;
  Served s(cfg);
  s.dir.put("f", pattern(1 << 20, 6));
  Share share = s.share("alice@");
  share.options = {{"request_size", "64KiB"}, {"depth", "2"}};
  auto session = s.connect(share);
  const std::string msg = read_error(*session, "f", 65536, ErrorKind::kRemote);
  EXPECT_NE(msg.find("closed the connection"), std::string::npos) << msg;
  // Later calls fail the same way instead of hanging.
  EXPECT_THROW(session->open("f", Mode::kRead, 0), Error);
}

}  // namespace
}  // namespace cp::transfer::afp
