#include "lab/lab_cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/testing/error_of.h"

namespace cp::lab {
namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_lab_command(args, out, err);
  return {code, out.str(), err.str()};
}

// The kind of the error parse_up_args throws for `args`.
ErrorKind kind_of(const std::vector<std::string>& args) {
  return cp::testing::kind_of([&] { parse_up_args(args); });
}

// Points default_dir() at a fresh empty directory for one test: a lab dir of the test's own, on the
// default instance whatever the caller's environment says ($CHOKEPOINT_LAB_INSTANCE,
// $CHOKEPOINT_LAB_DIR are put back).
class LabDirEnv {
 public:
  LabDirEnv() {
    char tmpl[] = "/tmp/cp-lab-cli-test-XXXXXX";
    CP_CHECK(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    for (const char* name : {"CHOKEPOINT_LAB_DIR", "CHOKEPOINT_LAB_INSTANCE"}) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    }
    setenv("CHOKEPOINT_LAB_DIR", dir_.c_str(), 1);
    unsetenv("CHOKEPOINT_LAB_INSTANCE");
  }
  ~LabDirEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name, value->c_str(), 1);
      else
        unsetenv(name);
    }
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// What `lab up` was asked for besides the delay: rate (bit/s), MTU, disk and
// RAM sizes (bytes) and whether each size was given.
auto asked(const UpArgs& a) {
  return std::tuple(a.options.rate_bits, a.options.mtu, a.options.disk_bytes, a.options.ram_bytes,
                    a.disk_size_given, a.ram_size_given);
}

TEST(LabCliTest, UpDefaults) {
  const UpArgs a = parse_up_args({});
  EXPECT_EQ(asked(a), std::tuple(0ull, 1500, 3ull << 30, 2ull << 30, false, false));
  EXPECT_EQ(a.options.delay_s, 0);
}

TEST(LabCliTest, UpAllOptions) {
  const UpArgs a = parse_up_args({"--rate", "1gbit", "--mtu", "9000", "--delay", "2ms",
                                  "--disk-size", "512MiB", "--ram-size=1GiB"});
  EXPECT_EQ(asked(a), std::tuple(1'000'000'000ull, 9000, 512ull << 20, 1ull << 30, true, true));
  EXPECT_DOUBLE_EQ(a.options.delay_s, 0.002);
  EXPECT_EQ(parse_up_args({"--rate", "200mbit"}).options.rate_bits, 200'000'000u);
}

TEST(LabCliTest, ServerProfileNasIsTheOnlyProfile) {
  EXPECT_EQ(parse_up_args({}).options.server_profile, "");
  EXPECT_EQ(parse_up_args({"--server-profile", "nas"}).options.server_profile, "nas");
  EXPECT_EQ(parse_up_args({}).options.server_login, "");
  EXPECT_EQ(parse_up_args({"--server-login", "user"}).options.server_login, "user");
  EXPECT_EQ(kind_of({"--server-profile", "qnap"}), ErrorKind::kUsage);
}

TEST(LabCliTest, InstanceOptionOnEverySubcommand) {
  EXPECT_FALSE(parse_up_args({}).instance.has_value());
  EXPECT_EQ(parse_up_args({"--instance", "9"}).instance, 9);
  EXPECT_EQ(parse_throttle_args({"--instance", "3", "--clear"}).instance, 3);
  EXPECT_EQ(kind_of({"--instance", "100"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--instance", "two"}), ErrorKind::kUsage);
  EXPECT_EQ(run({"down", "--instance", "-1"}).code, 2);
  EXPECT_EQ(run({"status", "--instance", "x"}).code, 2);
}

TEST(LabCliTest, PathOptionsPerHostMtuAndSamba) {
  const UpArgs a = parse_up_args({"--path-rate", "100mbit", "--server-mtu", "9000", "--client-mtu",
                                  "1500", "--delay", "5ms", "--samba", "smb2 max read = 16384",
                                  "--samba", "server signing = mandatory"});
  EXPECT_EQ(a.options.path_rate_bits, 100'000'000u);
  EXPECT_EQ(a.options.rate_bits, 0u);
  EXPECT_EQ(a.options.server_mtu, 9000);
  EXPECT_EQ(a.options.client_mtu, 1500);
  EXPECT_DOUBLE_EQ(a.options.delay_s, 0.005);
  EXPECT_EQ(a.options.samba_params,
            (std::vector<std::string>{"smb2 max read = 16384", "server signing = mandatory"}));
  EXPECT_EQ(parse_up_args({"--path-rate", "off"}).options.path_rate_bits, 0u);
  EXPECT_EQ(kind_of({"--path-rate", "fast"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--server-mtu", "20"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--samba", "no equals"}), ErrorKind::kUsage);
}

TEST(LabCliTest, VsftpdAndGaneshaLinesInOrder) {
  const UpArgs a = parse_up_args({"--vsftpd", "local_max_rate=20000000", "--ganesha",
                                  "MaxWrite = 65536", "--vsftpd", "use_sendfile=NO"});
  EXPECT_EQ(a.options.vsftpd_params,
            (std::vector<std::string>{"local_max_rate=20000000", "use_sendfile=NO"}));
  EXPECT_EQ(a.options.ganesha_params, (std::vector<std::string>{"MaxWrite = 65536"}));
  EXPECT_EQ(kind_of({"--vsftpd", "local_max_rate = 1"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--ganesha", "MaxWrite = 1; }"}), ErrorKind::kUsage);
}

TEST(LabCliTest, RateZeroMeansUnshaped) {
  EXPECT_EQ(parse_up_args({"--rate", "0"}).options.rate_bits, 0u);
  EXPECT_EQ(parse_up_args({"--rate", "off"}).options.rate_bits, 0u);
}

TEST(LabCliTest, BadUpArgumentsAreUsageErrors) {
  EXPECT_EQ(kind_of({"--bogus"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--rate", "fast"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--rate", "10furlongs"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--mtu", "jumbo"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--mtu", "20"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--delay", "soon"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--disk-size", "1MiB"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"--rate"}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of({"extra"}), ErrorKind::kUsage);
}

TEST(LabCliTest, UnknownOptionExitsTwoNamingIt) {
  const Outcome o = run({"up", "--frobnicate", "3"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err.rfind("chokepoint lab: ", 0), 0u) << o.err;
  EXPECT_NE(o.err.find("frobnicate"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("fix: "), std::string::npos) << o.err;
  EXPECT_EQ(run({"status", "--verbose"}).code, 2);
  EXPECT_EQ(run({"down", "--force"}).code, 2);
}

TEST(LabCliTest, MissingOrUnknownSubcommandExitsTwo) {
  Outcome o = run({});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("up, status, throttle or down"), std::string::npos) << o.err;
  o = run({"sideways"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("sideways"), std::string::npos) << o.err;
}

TEST(LabCliTest, ThrottleArguments) {
  ThrottleRequest r = parse_throttle_args({"--smbd-cpu", "20%", "--server-disk-read", "50MB/s"});
  ASSERT_TRUE(r.smbd_cpu.has_value());
  EXPECT_DOUBLE_EQ(*r.smbd_cpu, 0.2);
  EXPECT_EQ(r.disk_read_bps, std::optional<uint64_t>(50'000'000));
  EXPECT_FALSE(r.disk_write_bps.has_value());
  EXPECT_FALSE(r.clear);
  r = parse_throttle_args({"--clear"});
  EXPECT_TRUE(r.clear);
  EXPECT_FALSE(r.smbd_cpu.has_value());
  r = parse_throttle_args({"--smbd-cpu", "off", "--server-disk-write", "1MiB"});
  EXPECT_EQ(r.smbd_cpu, std::optional<double>(0));
  EXPECT_EQ(r.disk_write_bps, std::optional<uint64_t>(1u << 20));
  EXPECT_DOUBLE_EQ(parse_cpu_share("250%", "x"), 2.5);
  for (const char* bad : {"20", "-5%", "abc%", "%", "0.0.1%"}) {
    EXPECT_THROW(parse_cpu_share(bad, "--smbd-cpu"), Error) << bad;
  }
  for (const char* bad : {"fast", "100", "MB/s"}) {
    EXPECT_THROW(parse_bytes_rate(bad, "--server-disk-read"), Error) << bad;
  }
  r = parse_throttle_args(
      {"--client-cpu", "25%", "--client-disk-read", "50MB/s", "--client-disk-write", "off"});
  EXPECT_EQ(r.client_cpu, std::optional<double>(0.25));
  EXPECT_EQ(r.client_disk_read_bps, std::optional<uint64_t>(50'000'000));
  EXPECT_EQ(r.client_disk_write_bps, std::optional<uint64_t>(0));
  EXPECT_FALSE(r.smbd_cpu.has_value());
  EXPECT_FALSE(r.disk_read_bps.has_value());
  EXPECT_EQ(run({"throttle", "--smbd-cpu", "lots"}).code, 2);
  EXPECT_EQ(run({"throttle", "--client-cpu", "20"}).code, 2);
  EXPECT_EQ(run({"throttle", "--client-disk-read", "fast"}).code, 2);
  EXPECT_EQ(run({"throttle", "--gpu", "1"}).code, 2);
}

TEST(LabCliTest, HelpPrintsUsage) {
  for (auto args : {std::vector<std::string>{"--help"}, {"up", "-h"}}) {
    const Outcome o = run(args);
    EXPECT_EQ(o.code, 0);
    EXPECT_NE(o.out.find("chokepoint lab up [--rate R]"), std::string::npos);
    EXPECT_NE(o.out.find("--disk-size"), std::string::npos);
  }
}

// Each subcommand's --help is its own usage and options, not another's.
TEST(LabCliTest, EachSubcommandHasItsOwnHelp) {
  const std::map<std::string, std::string> own = {{"up", "--server-profile"},
                                                  {"status", "--json"},
                                                  {"throttle", "--smbd-cpu"},
                                                  {"down", "usage: chokepoint lab down"}};
  for (const auto& [sub, option] : own) {
    const Outcome o = run({sub, "--help"});
    EXPECT_EQ(o.code, 0) << sub;
    EXPECT_EQ(o.out.rfind("usage: chokepoint lab " + sub, 0), 0u) << o.out;
    EXPECT_NE(o.out.find(option), std::string::npos) << sub;
    for (const auto& [other, other_option] : own) {
      if (other != sub && other_option.rfind("--", 0) == 0) {
        EXPECT_EQ(o.out.find(other_option), std::string::npos) << sub << " shows " << other_option;
      }
    }
  }
  EXPECT_EQ(run({"sideways"}).code, 2);
}

TEST(LabCliTest, StatusWithoutLabSaysSoAndExitsNoLab) {
  LabDirEnv env;
  Outcome o = run({"status"});
  EXPECT_EQ(o.code, kExitNoLab) << o.err;
  EXPECT_EQ(o.out, "no lab is up; start one with `chokepoint lab up`\n");
  o = run({"status", "--json"});
  EXPECT_EQ(o.code, kExitNoLab) << o.err;
  EXPECT_FALSE(boost::json::parse(o.out).at("up").as_bool()) << o.out;
}

TEST(LabCliTest, DamagedStateIsReportedWithAFix) {
  LabDirEnv env;
  const std::string state = env.dir() + "/lab.json";
  FILE* f = fopen(state.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("{\"version\": 1", f);
  fclose(f);
  const Outcome o = run({"status"});
  unlink(state.c_str());
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("lab.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("lab down"), std::string::npos) << o.err;
}

// up and down refuse to run without root, before touching anything.
TEST(LabCliTest, NonRootIsTurnedAway) {
  LabDirEnv env;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // As root, become nobody first; as another user, already not root.
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    for (const char* sub : {"up", "down"}) {
      std::ostringstream out, err;
      const int code = run_lab_command({sub}, out, err);
      if (code != 1) _exit(4);
      if (err.str().find("the lab needs root (network namespaces, loop devices)") ==
              std::string::npos ||
          err.str().find("run as root, or point diagnose at real hosts") == std::string::npos) {
        _exit(5);
      }
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: cannot drop root; 4: wrong exit code; 5: wrong text";
}

}  // namespace
}  // namespace cp::lab
