#include "transfer/testing/lab_world.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/checksum.h"
#include "core/error.h"
#include "lab/layout.h"
#include "lab/sys.h"

namespace cp::transfer::testing {

LabWorld* g_world = nullptr;

namespace {

namespace fs = std::filesystem;

class LabEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!g_world) return;
    if (g_world->own) {
      try {
        lab::down(g_world->lab.instance, g_world->lab.dir);
        EXPECT_FALSE(lab::sys::find_user(g_world->lab.share_user).has_value())
            << "lab down left the share user";
      } catch (const Error& e) {
        ADD_FAILURE() << "lab down: " << describe(e);
      }
    }
    if (!g_world->dir.empty()) {
      std::error_code ec;
      fs::remove_all(g_world->dir, ec);
    }
    delete g_world;
    g_world = nullptr;
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new LabEnvironment);

}  // namespace

void bring_up_lab(const std::string& prefix) {
  if (g_world) return;
  g_world = new LabWorld;
  LabWorld& w = *g_world;
  if (geteuid() != 0) {
    w.skip = "needs root";
    return;
  }
  w.dir = fmt::format("/var/tmp/{}-{}", prefix, getpid());
  const std::string lab_dir = w.dir + "/lab";
  int instance = 0;
  try {
    fs::create_directories(w.dir);
    // The lab's users (the share user, the FTP servers) reach their files below it.
    fs::permissions(w.dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    instance = lab::test_instance();
    w.lab = lab::up(lab::LabOptions{}, instance, lab_dir);
    w.own = true;
  } catch (const Error& e) {
    w.error = "lab up failed: " + describe(e);
    try {
      if (instance != 0) lab::down(instance, lab_dir);
    } catch (const Error&) {
    }
    return;
  }
  std::ifstream in(w.lab.share_password_file);
  std::getline(in, w.password);
}

RunResult on_server(const std::string& command, const std::string& input) {
  return run_command({"nsenter", "-t", std::to_string(g_world->lab.server.sshd_pid), "-m", "--",
                      "sh", "-c", command},
                     input, 300);
}

std::string server_checksum(const std::string& path) {
  RunResult r = on_server("cat " + shell_quote(path));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return checksum_of(r.out);
}

std::string pattern(uint64_t size, uint64_t seed) {
  std::string data(size, '\0');
  fill_pattern(data.data(), size, seed, 0);
  return data;
}

std::string checksum_of(const std::string& data) {
  Checksum sum;
  sum.update(data.data(), data.size());
  return sum.hex() + "/" + std::to_string(data.size());
}

std::string put(Session& s, const std::string& rel, uint64_t size, uint64_t seed) {
  std::vector<char> buf(kBlock);
  Checksum sum;
  auto f = s.open(rel, Mode::kWrite, size);
  for (uint64_t off = 0; off < size; off += kBlock) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, size - off));
    fill_pattern(buf.data(), n, seed, off);
    sum.update(buf.data(), n);
    f->write(buf.data(), n);
  }
  f->close();
  return sum.hex() + "/" + std::to_string(size);
}

std::string get(Session& s, const std::string& rel, uint64_t size_hint) {
  std::vector<char> buf(kBlock);
  Checksum sum;
  uint64_t total = 0;
  auto f = s.open(rel, Mode::kRead, size_hint);
  while (size_t n = f->read(buf.data(), buf.size())) {
    sum.update(buf.data(), n);
    total += n;
  }
  f->close();
  return sum.hex() + "/" + std::to_string(total);
}

std::string share_dir(const std::string& medium) {
  const lab::ServerFiles f = lab::server_files(g_world->lab);
  return medium == "ram" ? f.ram_share : f.disk_share;
}

SambaGlobals::SambaGlobals(const std::string& lines)
    : conf_(lab::server_files(g_world->lab).smb_conf) {
  std::ifstream in(conf_);
  std::stringstream ss;
  ss << in.rdbuf();
  original_ = ss.str();
  set(lines);
}

SambaGlobals::~SambaGlobals() { reload(original_); }

void SambaGlobals::set(const std::string& lines) {
  const size_t at = original_.find("[global]\n");
  ASSERT_NE(at, std::string::npos) << conf_ << " has no [global] section";
  std::string text = original_;
  text.insert(at + 9, lines);
  reload(text);
}

void SambaGlobals::reload(const std::string& text) {
  std::ofstream(conf_, std::ios::trunc) << text;
  RunResult r = run_command({"ip", "netns", "exec", g_world->lab.server.netns, "smbcontrol", "-s",
                             conf_, "smbd", "reload-config"},
                            "", 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

void LabDriverTest::SetUp() {
  bring_up_lab(prefix_);
  if (!g_world->error.empty()) GTEST_FAIL() << g_world->error;
  if (!g_world->skip.empty()) GTEST_SKIP() << g_world->skip;
  // This thread (and what it starts) into the client host's network.
  self_ns_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(self_ns_, 0);
  const int ns = open(("/run/netns/" + g_world->lab.client.netns).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ns, 0);
  ASSERT_EQ(setns(ns, CLONE_NEWNET), 0) << errno_text(errno);
  close(ns);
  static int counter = 0;
  run_ = fmt::format("t{}-{}", getpid(), ++counter);
}

void LabDriverTest::TearDown() {
  if (self_ns_ >= 0) {
    EXPECT_EQ(setns(self_ns_, CLONE_NEWNET), 0);
    close(self_ns_);
  }
  if (g_world && g_world->skip.empty() && g_world->error.empty()) {
    on_server("rm -rf " + shell_quote(share_dir("ram") + "/" + run_) + " " +
              shell_quote(share_dir("disk") + "/" + run_));
  }
}

Share LabDriverTest::share(const std::string& protocol, const std::string& path, int port) const {
  Share s;
  s.url = port
              ? fmt::format("{}://{}:{}/{}", protocol, g_world->lab.server.data_address, port, path)
              : fmt::format("{}://{}/{}", protocol, g_world->lab.server.data_address, path);
  s.user = g_world->lab.share_user;
  s.password = g_world->password;
  return s;
}

std::unique_ptr<Session> LabDriverTest::connect(const Share& s) {
  return make_driver(s.url.substr(0, 3))->connect(s, cancel_);
}

}  // namespace cp::transfer::testing
