// diagnose --push and export --format openmetrics against the real thing:
// Debian's prometheus-pushgateway, started here on a loopback port and stopped
// by PID, its /metrics read back; the format checked with Debian's promtool.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "core/process.h"

#include "support.h"

namespace cp::itest {
namespace {

// A loopback port nothing listens on now (the kernel's pick for port 0).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string http_get(const std::string& url) {
  return run_command({"curl", "-sf", "--max-time", "5", url}, {}, 10).out;
}

// The Pushgateway on 127.0.0.1 with no persistence file, for one test.
class Pushgateway {
 public:
  Pushgateway() : port_(free_port()) {
    child_.emplace(std::vector<std::string>{
        "/usr/bin/prometheus-pushgateway",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"});
    for (int i = 0; i < 100 && !ready(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~Pushgateway() {
    child_->kill(SIGTERM);
    child_->wait(10);
  }
  bool ready() const {
    return run_command({"curl", "-sf", "--max-time", "1", url() + "/-/ready"}, {}, 5).exit_code ==
           0;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  pid_t pid() const { return child_->pid(); }

 private:
  int port_;
  std::optional<Child> child_;
};

using Labels = std::map<std::string, std::string>;

// Sample lines of `family` in exposition text: labels and value (label
// values here hold no escaped quote).
std::vector<std::pair<Labels, double>> samples_of(const std::string& text,
                                                  const std::string& family) {
  std::vector<std::pair<Labels, double>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0) continue;
    const size_t close = line.rfind('}');
    Labels labels;
    std::istringstream fields(line.substr(family.size() + 1, close - family.size() - 1));
    for (std::string kv; std::getline(fields, kv, ',');) {
      const size_t eq = kv.find('=');
      labels[kv.substr(0, eq)] = kv.substr(eq + 2, kv.size() - eq - 3);
    }
    out.emplace_back(labels, std::stod(line.substr(close + 2)));
  }
  return out;
}

// `have` holds every label of `want` with the same value.
bool holds(const Labels& have, const Labels& want) {
  for (const auto& [k, v] : want) {
    auto it = have.find(k);
    if (it == have.end() || it->second != v) return false;
  }
  return true;
}

std::string quick_plan(const TempDir& t) {
  return local_dirs(t) +
         "[disk]\nsizes = 4MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 500ms\ncount = 2\n"
         // One stream: a row per direction (several streams add rows whose labels
         // hold each one-stream row's, which the matching below would count twice).
         "streams = 1\n";
}

TEST(Pushgateway, DiagnosePushesTheStoredRunsFiguresUnderJobAndInstance) {
  Pushgateway gw;
  ASSERT_TRUE(gw.ready()) << "prometheus-pushgateway did not come up on " << gw.url();
  TempDir t;
  write_file(t.file("plan.ini"), quick_plan(t));
  const std::string db = t.file("runs.db");
  const RunResult r =
      chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db, "--plan",
                  t.file("plan.ini"), "--label", "nightly", "-q", "--push", gw.url()});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string pushed = http_get(gw.url() + "/metrics");
  const std::string exported =
      chokepoint({"export", "latest", "--db", db, "--format", "openmetrics"}).out;
  const auto got = samples_of(pushed, "chokepoint_layer_throughput_bytes_per_second");
  const auto want = samples_of(exported, "chokepoint_layer_throughput_bytes_per_second");
  ASSERT_FALSE(want.empty()) << exported;
  // Every exported figure is on the gateway, in the group job="chokepoint",
  // instance=<server>.
  for (const auto& [labels, value] : want) {
    Labels grouped = labels;
    grouped["job"] = "chokepoint";
    grouped["instance"] = "local";
    size_t found = 0;
    for (const auto& [have, v] : got) {
      if (!holds(have, grouped)) continue;
      ++found;
      EXPECT_DOUBLE_EQ(v, value);
    }
    EXPECT_EQ(found, 1u) << "where: " << labels.at("where") << "\n" << pushed;
    EXPECT_EQ(labels.at("run_label"), "nightly");
  }
  EXPECT_EQ(samples_of(pushed, "chokepoint_path_verdict").size(),
            samples_of(exported, "chokepoint_path_verdict").size());

  // The file for node_exporter's textfile collector passes promtool's lint.
  const RunResult lint = run_command({"/usr/bin/promtool", "check", "metrics"}, exported, 30);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

TEST(Pushgateway, AFailedPushExitsOneAndKeepsTheRun) {
  TempDir t;
  write_file(t.file("plan.ini"), quick_plan(t));
  const std::string db = t.file("runs.db");
  // Nothing listens on the port: the push fails after the run.
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port());
  const RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                                  "--plan", t.file("plan.ini"), "-q", "--push", url});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  EXPECT_GT(query_int(db, "SELECT count(*) FROM samples"), 0);
}

TEST(Pushgateway, ANonHttpUrlIsRefusedBeforeAnythingRuns) {
  TempDir t;
  const std::string db = t.file("runs.db");
  const RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                                  "-q", "--push", "pushgateway:9091"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace cp::itest
