// The stage runner against two real agents served in this process over
// socketpairs (disk on a temp dir, TCP over loopback), and against scripted
// agents (remote::AgentPort) for what a real agent will not do on cue.
#include "pipeline/runner.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/files_pass.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <tuple>

#include "agent/driver_role.h"
#include "agent_server/agent.h"
#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/messages_json.h"
#include "core/testing/scratch_dir.h"
#include "link/agent_link.h"
#include "link/agent_port.h"

namespace cp::pipeline {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

class InProcessAgent {
 public:
  explicit InProcessAgent(const std::string& name) {
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_);
    thread_ = std::thread([this] {
      agent::serve(sv_[1], sv_[1], {"test", "0", agent::make_client_role});
    });
    link = std::make_unique<remote::AgentLink>(remote::make_fd_stream(sv_[0], sv_[0], name), name);
    link->handshake(10);
  }
  ~InProcessAgent() {
    link.reset();
    thread_.join();
    close(sv_[1]);
  }
  std::unique_ptr<remote::AgentLink> link;

 private:
  int sv_[2];
  std::thread thread_;
};

// A share "nothing" in RAM through the null driver (no I/O).
SharePlan null_share() {
  SharePlan share;
  share.name = "nothing";
  share.url = "null:";
  share.driver = "null";
  share.medium = "ram";
  return share;
}

// The null share's protocol stage (one 1 MiB sample) followed by the request
// size sweep: 4 KiB and 64 KiB cells of 1 MiB each.
void add_null_share_sweep(Plan& plan) {
  plan.proto_sizes = {1u << 20};
  plan.proto_count = 1;
  plan.size_scan = true;
  plan.scan_sizes = {4096, 65536};
  plan.scan_bytes = 1u << 20;
  plan.shares.push_back(null_share());
}

struct Recorded : RunObserver {
  std::vector<stored::Host> hosts;
  std::vector<StageRecord> stages;
  std::map<int64_t, std::vector<stored::Sample>> samples;
  std::vector<std::string> notes;
  int progress_done = 0;
  void on_host(const stored::Host& h) override { hosts.push_back(h); }
  int64_t on_stage_begin(const StageRecord& s) override {
    stages.push_back(s);
    stages.back().id = static_cast<int64_t>(stages.size());
    return stages.back().id;
  }
  void on_sample(int64_t id, const stored::Sample& s) override { samples[id].push_back(s); }
  void on_stage_end(int64_t id, const std::string& status, const std::string& err) override {
    stages[id - 1].status = status;
    stages[id - 1].error = err;
  }
  void on_progress(const Progress& p) override { progress_done += p.done; }
  void on_note(const std::string& n) override { notes.push_back(n); }
};

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_.server = plan_.client = {dir_.string(), dir_.string()};
    plan_.disk_sizes = {1u << 20, 2u << 20};
    plan_.disk_count = 2;
    plan_.tcp_seconds = 0.3;
    plan_.tcp_count = 2;
    plan_.tcp_streams = 1;  // the sample counts below; streams = auto's depend on the CPU
    plan_.data_address = "127.0.0.1";
    plan_.disk_settle = 0;
    plan_.files_enabled = false;  // FilesStage* turn it on
  }
  // The small-file stage alone: `count` files of `size` bytes over `dirs` directories.
  void files_only(uint64_t count, uint64_t size, uint64_t dirs) {
    plan_.disk_enabled = false;
    plan_.tcp_enabled = false;
    plan_.files_enabled = true;
    plan_.files_count = count;
    plan_.files_size = size;
    plan_.files_dirs = dirs;
  }
  Agents agents() { return {*server_.link, *client_.link, "srv", "cli", plan_.data_address}; }
  // Runs plan_'s stages through both agents; what they recorded.
  Recorded run_plan() {
    Recorded rec;
    CancelToken cancel;
    run_stages(plan_, agents(), rec, cancel);
    return rec;
  }

  testing::ScratchDir scratch_{"runner-test"};
  const fs::path dir_ = scratch_.path();
  Plan plan_;
  InProcessAgent server_{"server"}, client_{"client"};
};

// Two streams through the real agents and the TCP probe on loopback: each
// sample of the two-stream series holds both streams' figures, which the
// receiver counted and which sum to the sample's bytes.
TEST_F(RunnerTest, TcpStreamsTwoRecordEachStreamThroughRealAgents) {
  plan_.disk_enabled = false;
  plan_.tcp_streams = 2;
  plan_.tcp_seconds = 0.3;
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 2u);
  for (int64_t id : {1, 2}) {
    EXPECT_EQ(rec.stages[id - 1].status, kComplete) << rec.stages[id - 1].error;
    ASSERT_EQ(rec.samples[id].size(), 4u);  // two with one stream, two with two
    for (size_t i = 0; i < 4; ++i) {
      const stored::Sample& s = rec.samples[id][i];
      ASSERT_TRUE(s.details.as<msg::TcpDetails>());
      const msg::TcpDetails& d = *s.details.as<msg::TcpDetails>();
      ASSERT_EQ(d.streams.size(), i < 2 ? 0u : 2u);
      uint64_t sum = 0;
      for (const auto& e : d.streams) {
        EXPECT_GT(e.bytes, 0u);
        EXPECT_TRUE(e.tcp_info.available);
        sum += e.bytes;
      }
      if (i >= 2) EXPECT_EQ(sum, s.bytes);
      EXPECT_EQ(d.sender_bytes, s.bytes);  // everything sent arrived
    }
  }
}

// The small-file stage through the real agents: a stage per end after the
// disk stage, a sample per phase and pass with its ops and latency, the
// random pass's seed stored, and nothing left in the run directory.
TEST_F(RunnerTest, FilesStageStoresAPhasePerSampleOnEachEnd) {
  files_only(120, 1000, 4);
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 2u);
  for (int64_t id : {1, 2}) {
    const StageRecord& st = rec.stages[id - 1];
    EXPECT_EQ(st.layer, "files");
    EXPECT_EQ(st.where, id == 1 ? "server" : "client");
    EXPECT_EQ(st.status, kComplete) << st.error;
    ASSERT_EQ(rec.samples[id].size(), 8u);  // 4 phases x (sequential, random)
    for (size_t i = 0; i < 8; ++i) {
      const stored::Sample& s = rec.samples[id][i];
      EXPECT_EQ(s.op,
                std::string("files-") + std::string(files::phase_name(files::kPhases[i % 4])));
      EXPECT_EQ(s.size, 1000u);
      EXPECT_EQ(s.bytes, i % 4 == 0 || i % 4 == 2 ? 120u * 1000 : 0u);
      EXPECT_GT(s.seconds, 0);
      EXPECT_TRUE(s.error.empty()) << s.error;
      ASSERT_TRUE(s.details.as<msg::FilesDetails>());
      const msg::FilesDetails& d = *s.details.as<msg::FilesDetails>();
      EXPECT_EQ(d.ops, 120u);
      EXPECT_EQ(d.count, 120u);
      EXPECT_EQ(d.dirs, 4u);
      EXPECT_EQ(d.order, i < 4 ? "sequential" : "random");
      if (i >= 4) EXPECT_NE(d.seed, 0u);
      EXPECT_GT(d.latency_us.median_us, 0);
      EXPECT_TRUE(s.cpu_of(st.where));  // that end's CPU over the phase
    }
  }
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind("files-", 0), std::string::npos) << e.path();
  }
}

// The small-file passes over a share (the path driver on a local directory,
// the server agent beside it): a stage after the protocol stage, a sample per
// phase with both ends' CPU, the share's protocol in the details, the disk
// share's reads after the server dropped the files, and nothing left.
TEST_F(RunnerTest, FilesOverAShareStoreEachPhaseWithBothEndsCpuAndLeaveNothing) {
  files_only(60, 700, 3);
  plan_.files_order = "sequential";
  plan_.proto_sizes = {1u << 20};
  plan_.proto_count = 1;
  const fs::path share_dir = dir_ / "share";
  fs::create_directories(share_dir);
  SharePlan share;
  share.name = "local-disk";
  share.url = share_dir.string();
  share.driver = "path";
  share.server_dir = share_dir.string();
  share.medium = "disk";
  plan_.shares = {share};
  Recorded rec = run_plan();
  // files server, files client, path disk, then files over the share.
  ASSERT_EQ(rec.stages.size(), 4u);
  const StageRecord& st = rec.stages[3];
  EXPECT_EQ(st.layer, "files");
  EXPECT_EQ(st.where, "disk");
  EXPECT_EQ(st.status, kComplete) << st.error;
  ASSERT_EQ(rec.samples[4].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const stored::Sample& s = rec.samples[4][i];
    SCOPED_TRACE(s.op);
    EXPECT_EQ(s.op, "files-" + std::string(files::phase_name(files::kPhases[i])));
    EXPECT_TRUE(s.error.empty()) << s.error;
    EXPECT_EQ(s.bytes, i == 0 || i == 2 ? 60u * 700 : 0u);
    ASSERT_TRUE(s.details.as<msg::FilesDetails>());
    const msg::FilesDetails& d = *s.details.as<msg::FilesDetails>();
    EXPECT_EQ(d.ops, 60u);
    EXPECT_EQ(d.driver, "path");
    EXPECT_EQ(d.share, "local-disk");
    EXPECT_TRUE(s.cpu_of("server"));
    EXPECT_TRUE(s.cpu_of("client"));
  }
  for (const auto& e : fs::recursive_directory_iterator(share_dir)) {
    EXPECT_EQ(e.path().filename().string().rfind("files-", 0), std::string::npos) << e.path();
  }
}

TEST_F(RunnerTest, RunsEveryStageAndRecordsEverySample) {
  Recorded rec = run_plan();
  ASSERT_EQ(rec.hosts.size(), 2u);
  EXPECT_EQ(rec.hosts[0].role, "server");
  EXPECT_EQ(rec.hosts[0].address, "srv");
  // The client's facts are stored whole, with its route and the agent that served it.
  ASSERT_TRUE(rec.hosts[1].facts);
  const msg::Facts& cf = *rec.hosts[1].facts;
  ASSERT_TRUE(cf.net.has_value());
  EXPECT_TRUE(cf.net->address.has_value());
  ASSERT_TRUE(cf.agent.has_value());
  EXPECT_EQ(cf.agent->role, "full");
  ASSERT_EQ(rec.stages.size(), 4u);
  EXPECT_EQ(rec.stages[0].layer + ":" + rec.stages[0].where, "disk:server");
  EXPECT_EQ(rec.stages[1].layer + ":" + rec.stages[1].where, "disk:client");
  EXPECT_EQ(rec.stages[2].layer + ":" + rec.stages[2].where, "tcp:server->client");
  EXPECT_EQ(rec.stages[3].layer + ":" + rec.stages[3].where, "tcp:client->server");
  for (const auto& s : rec.stages) EXPECT_EQ(s.status, kComplete) << s.error;
  // 2 sizes x (2 writes + 2 reads) per disk stage, distinct files; on the
  // server also 2 writes of the smallest size with a flush per block.
  ASSERT_EQ(rec.samples[1].size(), 10u);
  EXPECT_EQ(rec.samples[1][8].op, "syncwrite");
  EXPECT_EQ(rec.samples[1][8].size,
            *std::min_element(plan_.disk_sizes.begin(), plan_.disk_sizes.end()));
  ASSERT_TRUE(rec.samples[1][8].details.as<msg::DiskDetails>());
  const std::string method = rec.samples[1][8].details.as<msg::DiskDetails>()->method;
  EXPECT_TRUE(method.ends_with(" + fsync per block")) << method;
  ASSERT_EQ(rec.samples[2].size(), 8u);
  std::set<std::string> files;
  for (const auto& s : rec.samples[1]) {
    EXPECT_EQ(s.bytes, s.size);
    EXPECT_GT(s.seconds, 0);
    ASSERT_TRUE(s.details.as<msg::DiskDetails>());
    files.insert(s.details.as<msg::DiskDetails>()->file);
  }
  EXPECT_EQ(files.size(), 6u);  // each written file read back once, and 2 synchronous writes
  for (int64_t id : {3, 4}) {
    ASSERT_EQ(rec.samples[id].size(), 2u);
    for (const auto& s : rec.samples[id]) {
      ASSERT_TRUE(s.details.as<msg::TcpDetails>());
      const msg::TcpDetails& d = *s.details.as<msg::TcpDetails>();
      EXPECT_GT(s.bytes, 0u);
      // The receiver got everything the sender sent.
      EXPECT_EQ(s.bytes, d.sender_bytes);
      EXPECT_EQ(d.sender, id == 3 ? "server" : "client");
      EXPECT_TRUE(s.cpu_of("server") && s.cpu_of("client"));
    }
  }
  EXPECT_EQ(rec.progress_done, 10 + 8 + 2 + 2);
  // The agents removed their run directories.
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(RunnerTest, AFailedStageIsRecordedAndTheNextRuns) {
  plan_.disk_sizes = {uint64_t(1) << 50};  // no filesystem here has a PiB free
  plan_.disk_count = 1;
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 4u);
  EXPECT_EQ(rec.stages[0].status, kFailed);
  EXPECT_NE(rec.stages[0].error.find("not enough space"), std::string::npos) << rec.stages[0].error;
  EXPECT_EQ(rec.stages[2].status, kComplete);
  EXPECT_EQ(rec.stages[3].status, kComplete);
  EXPECT_FALSE(rec.notes.empty());
}

TEST_F(RunnerTest, ProtocolStageThroughTheNullDriver) {
  plan_.disk_enabled = false;
  plan_.tcp_enabled = false;
  plan_.proto_sizes = {3u << 20};
  plan_.proto_count = 2;
  plan_.shares.push_back(null_share());
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 1u);
  EXPECT_EQ(rec.stages[0].layer, "null");
  EXPECT_EQ(rec.stages[0].where, "ram");
  EXPECT_EQ(rec.stages[0].status, kComplete) << rec.stages[0].error;
  ASSERT_EQ(rec.samples[1].size(), 4u);  // 2 reads, 2 writes
  for (const auto& s : rec.samples[1]) {
    EXPECT_EQ(s.bytes, 3u << 20);
    EXPECT_TRUE(s.error.empty()) << s.error;
    ASSERT_TRUE(s.details.as<msg::TransferDetails>());
    EXPECT_EQ(s.details.as<msg::TransferDetails>()->share, "nothing");
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(RunnerTest, SweepRecordsEachRequestSizeAndSkipsWhatTheDriverCannotDo) {
  plan_.disk_enabled = false;
  plan_.tcp_enabled = false;
  add_null_share_sweep(plan_);
  plan_.shares.back().options["size"] = "4MiB";
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 2u);
  EXPECT_TRUE(json::parse(rec.stages[1].params_json).at("sweep").as_bool());
  EXPECT_EQ(rec.stages[1].status, kComplete) << rec.stages[1].error;
  // The null driver reads and writes sequentially only.
  ASSERT_EQ(rec.samples[2].size(), 4u);
  std::vector<std::string> cells;
  for (const auto& s : rec.samples[2]) {
    cells.push_back(s.op + "/" + std::to_string(s.size));
    EXPECT_EQ(s.bytes, 1u << 20) << s.op;
  }
  EXPECT_EQ(cells, (std::vector<std::string>{"sweep-seqread/4096", "sweep-seqwrite/4096",
                                             "sweep-seqread/65536", "sweep-seqwrite/65536"}));
  int skipped = 0;
  for (const auto& n : rec.notes) skipped += n.find("skipped") != std::string::npos;
  EXPECT_EQ(skipped, 2);  // randread and randwrite, said once each
}

TEST_F(RunnerTest, AFailingShareIsRecordedAndTheNextShareRuns) {
  plan_.disk_enabled = false;
  plan_.tcp_enabled = false;
  plan_.proto_sizes = {1u << 20};
  plan_.proto_count = 1;
  SharePlan bad;
  bad.name = "bad";
  bad.url = "null:";
  bad.driver = "gopher";  // no such driver: the connect fails on the client
  bad.medium = "ram";
  SharePlan good = bad;
  good.name = "good";
  good.driver = "null";
  good.medium = "disk";
  plan_.shares = {bad, good};
  Recorded rec = run_plan();
  ASSERT_EQ(rec.stages.size(), 2u);
  EXPECT_EQ(rec.stages[0].status, kFailed);
  EXPECT_NE(rec.stages[0].error.find("no transfer driver 'gopher'"), std::string::npos)
      << rec.stages[0].error;
  ASSERT_EQ(rec.samples[1].size(), 1u);
  EXPECT_FALSE(rec.samples[1][0].error.empty());  // the failed sample says why
  EXPECT_EQ(rec.stages[1].status, kComplete) << rec.stages[1].error;
}

TEST_F(RunnerTest, CancelMarksTheStageInterrupted) {
  plan_.disk_enabled = false;
  plan_.tcp_seconds = 30;
  Recorded rec;
  CancelToken cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.cancel();
  });
  try {
    run_stages(plan_, agents(), rec, cancel);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled) << e.what();
  }
  t.join();
  ASSERT_EQ(rec.stages.size(), 1u);
  EXPECT_EQ(rec.stages[0].status, kInterrupted);
}

// An agent whose answers a test scripts: `answer` gets each request's type and
// fields (and may throw an Error, as a link does for a failed or lost agent).
// What every run asks (facts, prepare, check_space, cleanup) has a default answer.
class ScriptedAgent : public remote::AgentPort {
 public:
  using Answer = std::function<json::object(const std::string& type, const json::object& args)>;
  ScriptedAgent(std::string name, Answer answer) : name_(std::move(name)), answer_(answer) {}

  json::object call(const std::string& type, json::object args, double, const ProgressFn&,
                    const CancelToken* cancel) override {
    if (cancel) cancel->check();
    calls.push_back(type);
    if (type == "facts") {
      msg::Facts f;
      f.hostname = name_;
      f.net = msg::NetFacts{};
      f.net->address = name_ == "server" ? "198.18.0.1" : "198.18.0.2";
      return msg::to_json(f);
    }
    if (type == "prepare") {
      msg::PrepareResult made;
      for (const auto& d : msg::decode<msg::PrepareRequest>(args, "prepare").dirs) {
        made.dirs[d] = d + "/chokepoint-run-x";
      }
      return msg::to_json(made);
    }
    if (type == "check_space")
      return msg::to_json(msg::CheckSpaceResult{1u << 30, 1u << 30, "tmpfs", ""});
    if (type == "cleanup") return msg::to_json(msg::AgentStats{1});
    return answer_(type, args);
  }
  double last_call_max_silence() const override { return silence; }
  const std::string& name() const override { return name_; }
  const msg::Hello& hello() const override { return hello_; }

  std::vector<std::string> calls;
  double silence = 0;  // what the "link" says of the last call

 private:
  std::string name_;
  Answer answer_;
  msg::Hello hello_ = [] {
    msg::Hello h;
    h.role = "full";
    h.arch = "x86_64";
    return h;
  }();
};

Plan disk_only_plan() {
  Plan plan;
  plan.server = plan.client = {"/ram", "/disk"};
  plan.disk_sizes = {1u << 20};
  plan.disk_count = 2;
  plan.disk_settle = 0;
  plan.tcp_enabled = false;
  plan.proto_enabled = false;
  plan.files_enabled = false;
  return plan;
}

// A disk answer of `bytes` in 0.5 s.
json::object disk_answer(uint64_t bytes) {
  msg::DiskResult r;
  r.bytes = bytes;
  r.seconds = 0.5;
  r.direct = true;
  r.method = "O_DIRECT";
  r.cpu.seconds = 0.5;
  return msg::to_json(r);
}

TEST(ScriptedRunnerTest, AnAgentLostMidSeriesLeavesTheStageFailedWithItsSamplesStored) {
  const Plan plan = disk_only_plan();
  int disk_calls = 0;
  ScriptedAgent server("server", [&](const std::string& type, const json::object& args) {
    if (type != "disk") return json::object{};
    // The third sample (the first read) finds the agent gone.
    if (++disk_calls == 3) throw Error(ErrorKind::kRemote, "server: the agent's channel closed");
    return disk_answer(args.at("size").to_number<uint64_t>());
  });
  ScriptedAgent client("client", [&](const std::string& type, const json::object&) {
    return type == "disk" ? disk_answer(1u << 20) : json::object{};
  });
  Recorded rec;
  CancelToken cancel;
  run_stages(plan, {server, client, "srv", "cli", "198.18.0.1"}, rec, cancel);
  ASSERT_EQ(rec.stages.size(), 2u);
  EXPECT_EQ(rec.stages[0].where, "server");
  EXPECT_EQ(rec.stages[0].status, kFailed);
  // The two samples before the loss are stored with their figures, the lost one with its error.
  ASSERT_EQ(rec.samples[1].size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_TRUE(rec.samples[1][i].error.empty()) << rec.samples[1][i].error;
    EXPECT_EQ(rec.samples[1][i].bytes, 1u << 20);
    EXPECT_EQ(rec.samples[1][i].op, "write");
  }
  EXPECT_EQ(rec.samples[1][2].op, "read");
  EXPECT_FALSE(rec.samples[1][2].error.empty());
  EXPECT_EQ(rec.samples[1][2].bytes, 0u);
  // The client's stage still ran, and both agents were asked to clean up.
  EXPECT_EQ(rec.stages[1].status, kComplete) << rec.stages[1].error;
  EXPECT_EQ(rec.samples[2].size(), 4u);
  EXPECT_EQ(server.calls.back(), "cleanup");
  EXPECT_EQ(client.calls.back(), "cleanup");
}

TEST(ScriptedRunnerTest, ASampleDuringWhichTheAgentWasSilentIsStoredStalled) {
  Plan plan = disk_only_plan();
  plan.disk_count = 1;
  plan.stall_after = 5;
  ScriptedAgent* self = nullptr;
  ScriptedAgent server("server", [&](const std::string& type, const json::object& args) {
    if (type != "disk") return json::object{};
    // The write's agent said nothing for 8 s; the read's did not stall.
    self->silence = args.contains("size") ? 8 : 0;
    return disk_answer(1u << 20);
  });
  self = &server;
  ScriptedAgent client("client", [&](const std::string& type, const json::object&) {
    return type == "disk" ? disk_answer(1u << 20) : json::object{};
  });
  Recorded rec;
  CancelToken cancel;
  run_stages(plan, {server, client, "srv", "cli", "198.18.0.1"}, rec, cancel);
  ASSERT_EQ(rec.samples[1].size(), 3u);  // write, read, synchronous write
  const stored::Sample& write = rec.samples[1][0];
  EXPECT_EQ(write.op, "write");
  EXPECT_FALSE(write.error.empty());
  EXPECT_TRUE(write.details.stalled);
  EXPECT_DOUBLE_EQ(write.details.silent_seconds, 8);
  // The rest of the details are the disk sample's.
  ASSERT_TRUE(write.details.as<msg::DiskDetails>());
  EXPECT_EQ(write.details.as<msg::DiskDetails>()->method, "O_DIRECT");
  EXPECT_TRUE(rec.samples[1][1].error.empty()) << rec.samples[1][1].error;
  EXPECT_EQ(rec.stages[0].status, kComplete);  // stalled samples leave the stage complete
}

TEST(ScriptedRunnerTest, TcpFigureIsTheReceiversAndTheDetailsHoldTheSendersSocket) {
  Plan plan = disk_only_plan();
  plan.disk_enabled = false;
  plan.tcp_enabled = true;
  plan.tcp_count = 1;
  plan.tcp_seconds = 1;
  auto tcp_answer = [](uint64_t bytes, bool sender, uint64_t rtt_us) {
    msg::TcpResult r;
    r.bytes = bytes;
    r.seconds = 1;
    r.sender = sender;
    r.tcp_info.available = true;
    r.tcp_info.rtt_us = rtt_us;
    return msg::to_json(r);
  };
  int server_results = 0;
  ScriptedAgent server("server", [&](const std::string& type, const json::object&) {
    if (type == "tcp_listen") return msg::to_json(msg::TcpListenResult{5001});
    // Download (server sends) first, then upload (server receives 900 of 1000).
    return ++server_results == 1 ? tcp_answer(1000, true, 111) : tcp_answer(900, false, 222);
  });
  ScriptedAgent client("client", [&](const std::string& type, const json::object& args) {
    const auto run = msg::decode<msg::TcpRunRequest>(args, "tcp_run");
    EXPECT_EQ(run.host, "198.18.0.1");
    EXPECT_EQ(run.port, 5001u);
    return run.mode == "recv" ? tcp_answer(990, false, 333) : tcp_answer(1000, true, 444);
  });
  Recorded rec;
  CancelToken cancel;
  Agents a{server, client, "srv", "cli", "198.18.0.1"};
  run_stages(plan, a, rec, cancel);
  ASSERT_EQ(rec.stages.size(), 2u);
  ASSERT_EQ(rec.samples[1].size(), 1u);
  ASSERT_EQ(rec.samples[2].size(), 1u);
  const stored::Sample& down = rec.samples[1][0];
  const stored::Sample& up = rec.samples[2][0];
  EXPECT_EQ(down.bytes, 990u);  // the client received
  EXPECT_EQ(up.bytes, 900u);    // the server received
  ASSERT_TRUE(down.details.as<msg::TcpDetails>() && up.details.as<msg::TcpDetails>());
  const msg::TcpDetails& dd = *down.details.as<msg::TcpDetails>();
  EXPECT_EQ(dd.sender, "server");
  EXPECT_EQ(dd.sender_bytes, 1000u);
  EXPECT_EQ(dd.tcp_info.rtt_us, 111u);
  EXPECT_EQ(dd.receiver_tcp_info.rtt_us, 333u);
  const msg::TcpDetails& ud = *up.details.as<msg::TcpDetails>();
  EXPECT_EQ(ud.sender, "client");
  EXPECT_EQ(ud.tcp_info.rtt_us, 444u);
  EXPECT_EQ(ud.receiver_tcp_info.rtt_us, 222u);
}

// [tcp] streams: both agents answer one stream or several, each end on two
// cores, the sending thread at `thread_pct` of a core; `total(n)` is what n
// streams carry at once, bytes in 1 s.
struct StreamsScript {
  double thread_pct = 99;
  std::function<uint64_t(size_t)> total;
  std::vector<size_t> asked;  // streams per tcp_run, in order
  json::object answer(size_t n, bool sender) const {
    msg::TcpResult r;
    r.bytes = total(n);
    r.seconds = 1;
    r.sender = sender;
    r.tcp_info.available = true;
    r.cpu.seconds = 1;
    r.cpu.core_busy_pct = {thread_pct, 10};
    r.cpu.top.push_back({});
    r.cpu.top.back().comm = "chokepoint-agen";
    r.cpu.top.back().role = "agent";
    r.cpu.top.back().cpu_pct = thread_pct;
    r.cpu.top.back().top_thread_pct = thread_pct;
    for (size_t i = 0; n > 1 && i < n; ++i) r.streams.push_back({r.bytes / n, 1, r.tcp_info});
    return msg::to_json(r);
  }
};

// One direction's samples (server -> client) under `script` and `plan`.
std::vector<stored::Sample> tcp_samples(Plan plan, StreamsScript& script) {
  plan.disk_enabled = false;
  plan.tcp_enabled = true;
  plan.tcp_seconds = 1;
  ScriptedAgent server("server", [&](const std::string& type, const json::object& args) {
    if (type == "tcp_listen") return msg::to_json(msg::TcpListenResult{5001});
    const auto q = msg::decode<msg::TcpResultRequest>(args, "tcp_result");
    return script.answer(std::max<size_t>(1, q.tokens.size()), true);
  });
  ScriptedAgent client("client", [&](const std::string&, const json::object& args) {
    const auto q = msg::decode<msg::TcpRunRequest>(args, "tcp_run");
    script.asked.push_back(std::max<size_t>(1, q.tokens.size()));
    return script.answer(script.asked.back(), false);
  });
  Recorded rec;
  CancelToken cancel;
  Agents a{server, client, "srv", "cli", "198.18.0.1"};
  run_stages(plan, a, rec, cancel);
  EXPECT_EQ(rec.stages.at(0).status, kComplete) << rec.stages.at(0).error;
  return rec.samples[1];
}

size_t streams_of(const stored::Sample& s) {
  const msg::TcpDetails* d = s.details.as<msg::TcpDetails>();
  return std::max<size_t>(1, d ? d->streams.size() : 0);
}

TEST(ScriptedRunnerTest, TcpStreamsAutoAddsStreamsWhileOneIsCpuBoundAndTheTotalRises) {
  Plan plan = disk_only_plan();
  plan.tcp_count = 3;
  StreamsScript script;
  script.total = [](size_t n) { return n == 1 ? 1000u : 1800u; };  // two cores: at most two
  const std::vector<stored::Sample> s = tcp_samples(plan, script);
  // Three with one stream, one at two (it rose), two more at two: three there.
  ASSERT_EQ(s.size(), 6u);
  std::vector<size_t> streams;
  for (const auto& r : s) streams.push_back(streams_of(r));
  EXPECT_EQ(streams, (std::vector<size_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(s[3].bytes, 1800u);  // the total; each stream's in the details
  ASSERT_TRUE(s[3].details.as<msg::TcpDetails>());
  EXPECT_EQ(s[3].details.as<msg::TcpDetails>()->streams.at(1).bytes, 900u);
}

TEST(ScriptedRunnerTest, TcpStreamsAutoStopsWhenTheTotalDoesNotRise) {
  Plan plan = disk_only_plan();
  plan.tcp_count = 2;
  StreamsScript script;
  script.total = [](size_t n) { return n == 1 ? 1000u : 1020u; };  // +2 %: no gain
  const std::vector<stored::Sample> s = tcp_samples(plan, script);
  std::vector<size_t> streams;
  for (const auto& r : s) streams.push_back(streams_of(r));
  EXPECT_EQ(streams, (std::vector<size_t>{1, 1, 2}));  // tried two, kept none
}

TEST(ScriptedRunnerTest, TcpStreamsAutoKeepsOneStreamWhenNoEndIsCpuBound) {
  Plan plan = disk_only_plan();
  plan.tcp_count = 2;
  StreamsScript script;
  script.thread_pct = 40;
  script.total = [](size_t n) { return 1000u * n; };
  EXPECT_EQ(tcp_samples(plan, script).size(), 2u);
  EXPECT_EQ(script.asked, (std::vector<size_t>{1, 1, 1, 1}));  // both directions
}

TEST(ScriptedRunnerTest, TcpStreamsNTakesCountSamplesAtNAfterTheOneStreamSeries) {
  Plan plan = disk_only_plan();
  plan.tcp_count = 2;
  plan.tcp_streams = 4;
  StreamsScript script;
  script.thread_pct = 40;  // N is asked for whatever the CPU
  script.total = [](size_t n) { return 1000u * n; };
  const std::vector<stored::Sample> s = tcp_samples(plan, script);
  std::vector<size_t> streams;
  for (const auto& r : s) streams.push_back(streams_of(r));
  EXPECT_EQ(streams, (std::vector<size_t>{1, 1, 4, 4}));
  EXPECT_EQ(s[2].bytes, 4000u);
}

TEST(ScriptedRunnerTest, TcpStreamsOneTakesOneStreamOnly) {
  Plan plan = disk_only_plan();
  plan.tcp_count = 2;
  plan.tcp_streams = 1;
  StreamsScript script;
  script.total = [](size_t n) { return 1000u * n; };
  EXPECT_EQ(tcp_samples(plan, script).size(), 2u);
}

// The sweep asks the agent only for the cells the driver's table says it can
// do: the null driver has no random reads or writes, so however willing the
// agent, it is asked for sequential cells only (each pattern noted once).
TEST(ScriptedRunnerTest, SweepSkipsThePatternsTheDriverTableLacksWithoutAskingTheAgent) {
  Plan plan = disk_only_plan();
  plan.disk_enabled = false;
  plan.proto_enabled = true;  // the sweep runs after each share's protocol stage
  add_null_share_sweep(plan);
  std::vector<std::string> asked;
  ScriptedAgent server("server",
                       [&](const std::string&, const json::object&) { return json::object{}; });
  ScriptedAgent client("client", [&](const std::string& type, const json::object& args) {
    if (type == "make_file") {
      return msg::to_json(msg::FileResult{1u << 20, 0.1, "c", false, ""});
    }
    if (type == "transfer") {
      msg::TransferResult r;
      r.bytes = 1u << 20;
      r.seconds = 0.1;
      r.checksum = "c";
      return msg::to_json(r);
    }
    if (type != "sweep") return json::object{};
    const auto req = msg::decode<msg::SizeScanRequest>(args, "sweep");
    asked.push_back(req.pattern);
    msg::SizeScanResult r;
    r.bytes = req.bytes;
    r.seconds = 0.1;
    return msg::to_json(r);
  });
  Recorded rec;
  CancelToken cancel;
  run_stages(plan, {server, client, "srv", "cli", "198.18.0.1"}, rec, cancel);
  EXPECT_EQ(asked, (std::vector<std::string>{"seqread", "seqwrite", "seqread", "seqwrite"}));
  ASSERT_EQ(rec.stages.size(), 2u);  // the share's protocol stage, then its sweep
  EXPECT_EQ(rec.stages[0].status, kComplete) << rec.stages[0].error;
  EXPECT_EQ(rec.stages[1].status, kComplete) << rec.stages[1].error;
  EXPECT_EQ(rec.samples[2].size(), 4u);
  int skipped = 0;
  for (const auto& n : rec.notes) skipped += n.find("skipped") != std::string::npos;
  EXPECT_EQ(skipped, 2);
}

// The TCP stage's rate goes to the drivers whose table declares a path_rate
// option (smb), as that option, unless the share sets it; others get none.
TEST(ScriptedRunnerTest, PathRateGoesToDriversThatDeclareTheOption) {
  Plan plan = disk_only_plan();
  plan.disk_enabled = false;
  plan.proto_enabled = true;
  plan.proto_sizes = {1u << 20};
  plan.proto_count = 1;
  for (const auto& [name, url, driver] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"s", "smb://h/s", "smb"},
                                                                      {"n", "null:", "null"}}) {
    SharePlan share;
    share.name = name;
    share.url = url;
    share.driver = driver;
    share.medium = "ram";
    plan.shares.push_back(share);
  }
  std::map<std::string, std::map<std::string, std::string>> options;  // share -> what it got
  ScriptedAgent server("server",
                       [&](const std::string&, const json::object&) { return json::object{}; });
  ScriptedAgent client("client", [&](const std::string& type, const json::object& args) {
    if (type == "make_file") return msg::to_json(msg::FileResult{1u << 20, 0.1, "c", false, ""});
    if (type != "transfer") return json::object{};
    const auto req = msg::decode<msg::TransferRequest>(args, "transfer");
    options[req.share.name] = req.share.options;
    msg::TransferResult r;
    r.bytes = 1u << 20;
    r.seconds = 0.1;
    r.checksum = "c";
    return msg::to_json(r);
  });
  Recorded rec;
  CancelToken cancel;
  Agents a{server, client, "srv", "cli", "198.18.0.1"};
  a.tcp_rates["client->server"] = {12.5e6};  // 100 Mbit/s
  run_stages(plan, a, rec, cancel);
  EXPECT_EQ(options["s"].at("path_rate"), "100000000bit");
  EXPECT_EQ(options["n"].count("path_rate"), 0u);
}

}  // namespace
}  // namespace cp::pipeline
