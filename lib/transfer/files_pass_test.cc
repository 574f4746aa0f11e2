// The small-file pass over a share (transfer/files_pass.h) with the null
// driver (the framework's own cost) and the path driver on a local
// directory (real files: what is left after the pass is read back).
#include "transfer/files_pass.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "core/error.h"
#include "transfer/forked_session.h"
#include "transfer/testing/children.h"
#include "transfer/testing/files_pass_checks.h"

namespace cp::transfer {
namespace {

namespace fs = std::filesystem;
using files::Phase;

// A session that forwards to another, each operation `delay` longer, and
// whose stat fails from the `fail_stat_after`-th on (a server refusing it).
class SlowSession : public Session {
 public:
  SlowSession(std::unique_ptr<Session> inner, std::chrono::microseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  std::unique_ptr<File> open(const std::string& p, Mode m, uint64_t hint) override {
    if (opens_.fetch_add(1) >= fail_open_after) {
      throw Error(ErrorKind::kIo, "no space left creating " + p);
    }
    std::this_thread::sleep_for(delay_);
    return inner_->open(p, m, hint);
  }
  void remove(const std::string& p) override { inner_->remove(p); }
  FileInfo stat(const std::string& p) override {
    if (stats_.fetch_add(1) >= fail_stat_after) {
      throw Error(ErrorKind::kIo, "permission denied reading " + p);
    }
    if (unsupported_stat) throw Error(ErrorKind::kUnsupported, "the server does not answer SIZE");
    std::this_thread::sleep_for(delay_);
    return inner_->stat(p);
  }
  void mkdir(const std::string& p) override { inner_->mkdir(p); }
  void rmdir(const std::string& p) override { inner_->rmdir(p); }
  uint64_t fail_stat_after = UINT64_MAX;
  uint64_t fail_open_after = UINT64_MAX;
  bool unsupported_stat = false;

 private:
  std::unique_ptr<Session> inner_;
  std::chrono::microseconds delay_;
  std::atomic<uint64_t> stats_{0}, opens_{0};
};

// A session that keeps several operations in flight itself
// (Capabilities::file_ops_in_flight), as the nfs driver does on its one
// connection: each operation runs on a thread of its own against a path
// session, `delay` longer, and their ends are reported on the caller's
// thread in start order. It counts how many ran at once, and can fail its
// `fail_at`-th operation or cancel after `cancel_after` ended.
class InFlightSession : public Session {
 public:
  InFlightSession(std::function<std::unique_ptr<Session>()> connect,
                  std::chrono::microseconds delay, CancelToken& cancel)
      : connect_(std::move(connect)), inner_(connect_()), delay_(delay), cancel_(cancel) {}
  std::unique_ptr<File> open(const std::string& p, Mode m, uint64_t hint) override {
    return inner_->open(p, m, hint);
  }
  void remove(const std::string& p) override { inner_->remove(p); }
  FileInfo stat(const std::string& p) override { return inner_->stat(p); }
  void mkdir(const std::string& p) override { inner_->mkdir(p); }
  void rmdir(const std::string& p) override { inner_->rmdir(p); }

  void run_file_ops(FileOps& ops) override {
    struct Out {
      uint64_t id;
      std::future<std::string> result;  // the bytes read
    };
    std::deque<Out> live;
    bool more = true;
    while (more || !live.empty()) {
      while (more && live.size() < ops.depth) {
        uint64_t id = 0;
        std::string path;
        if (!(more = ops.next(id, path))) break;
        const uint64_t n = ++started_;
        live.push_back({id, std::async(std::launch::async,
                                       [this, &ops, path, n] { return one(ops, path, n); })});
      }
      if (live.empty()) break;
      Out out = std::move(live.front());
      live.pop_front();
      std::string got;
      std::exception_ptr error;
      try {
        got = out.result.get();
      } catch (const Error&) {
        error = std::current_exception();
      }
      ops.ended(out.id, {got.data(), got.size()}, error);
      if (++ended_ == cancel_after) cancel_.cancel();
    }
  }

  uint64_t started() const { return started_; }  // operations run_file_ops started
  uint64_t fail_at = UINT64_MAX;                 // the operation (1-based) that fails
  uint64_t cancel_after = UINT64_MAX;            // operations ended before a cancel
  std::atomic<unsigned> at_once{0}, at_once_max{0};

 private:
  std::string one(const FileOps& ops, const std::string& path, uint64_t n) {
    const unsigned now = ++at_once;
    for (unsigned seen = at_once_max.load();
         now > seen && !at_once_max.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(delay_);
    struct Leave {
      std::atomic<unsigned>& n;
      ~Leave() { --n; }
    } leave{at_once};
    if (n == fail_at) throw Error(ErrorKind::kIo, "no space left creating " + path);
    auto s = connect_();  // a session per operation: the path driver's are per thread
    std::string got;
    switch (ops.op) {
      case FileOp::kCreate: {
        auto f = s->open(path, Mode::kWrite, ops.data.size());
        f->write(ops.data.data(), ops.data.size());
        f->close();
        break;
      }
      case FileOp::kStat:
        s->stat(path);
        break;
      case FileOp::kRead: {
        auto f = s->open(path, Mode::kRead, ops.data.size());
        got.resize(ops.data.size() + 1);
        size_t k = 0;
        for (size_t r; k < got.size() && (r = f->read(got.data() + k, got.size() - k)) > 0;) k += r;
        got.resize(k);
        f->close();
        break;
      }
      case FileOp::kRemove:
        s->remove(path);
        break;
    }
    return got;
  }

  std::function<std::unique_ptr<Session>()> connect_;
  std::unique_ptr<Session> inner_;
  std::chrono::microseconds delay_;
  CancelToken& cancel_;
  uint64_t started_ = 0, ended_ = 0;
};

void expect_ordered_latency(const files::PhaseStats& p) {
  SCOPED_TRACE(std::string(files::phase_name(p.phase)));
  EXPECT_GT(p.latency.median_us, 0);
  EXPECT_LE(p.latency.median_us, p.latency.p99_us);
  EXPECT_LE(p.latency.p99_us, p.latency.max_us);
}

class FilesPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cp-files-pass-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Session> connect(const std::string& driver) {
    Share s;
    s.url = driver == "null" ? "null:" : dir_.string();
    return make_driver(driver)->connect(s, cancel_);
  }
  // `count` files of `size` bytes over `dirs` directories, `in_flight` operations at once.
  FilesPassOptions options(uint64_t count, uint64_t size, uint64_t dirs,
                           unsigned in_flight = 1) const {
    FilesPassOptions o;
    o.tree = {.count = count, .size = size, .dirs = dirs};
    o.root = "pass";
    o.budget_s = 0;
    o.in_flight = in_flight;
    return o;
  }
  // options(count, size, dirs) visiting the files in an order drawn from `seed`.
  FilesPassOptions random_order(uint64_t count, uint64_t size, uint64_t dirs, uint64_t seed) const {
    FilesPassOptions o = options(count, size, dirs);
    o.random = true;
    o.seed = seed;
    return o;
  }
  // The pass over `s`, counting in opened_ the other sessions it opens from
  // `open` (another path session unless given).
  FilesPassResult run_counting_opens(Session& s, const DriverSpec& spec, const FilesPassOptions& o,
                                     const SessionSource& open = nullptr) {
    return run_files_pass(
        s,
        [&]() -> std::unique_ptr<Session> {
          ++opened_;
          return open ? open() : connect("path");
        },
        spec, o, cancel_);
  }
  // The path driver as one that keeps its file operations in flight on its one session.
  static DriverSpec in_flight_path_spec() {
    DriverSpec spec = driver_spec("path");
    spec.caps.file_ops_in_flight = true;
    return spec;
  }
  // The pass over the in-flight driver `s` with `count` files of `size` bytes
  // over `dirs` directories, `in_flight` at once, checking what every such pass
  // shows: no other session opened, and every file done (expect_every_file_done).
  FilesPassResult run_in_flight(InFlightSession& s, uint64_t count, uint64_t size, uint64_t dirs,
                                unsigned in_flight) {
    const FilesPassResult r =
        run_counting_opens(s, in_flight_path_spec(), options(count, size, dirs, in_flight));
    EXPECT_EQ(opened_, 0);
    testing::expect_every_file_done(r, count, size, in_flight);
    return r;
  }
  // Entries left under the share's directory.
  size_t left() const {
    return static_cast<size_t>(std::distance(fs::recursive_directory_iterator(dir_), {}));
  }
  fs::path dir_;
  CancelToken cancel_;
  int opened_ = 0;
};

TEST_F(FilesPassTest, NullDriverRunsEveryPhaseOverEveryFileOneAtATime) {
  auto s = connect("null");
  const FilesPassResult r =
      run_files_pass(*s, nullptr, driver_spec("null"), options(200, 4096, 10), cancel_);
  EXPECT_EQ(r.created, 200u);
  EXPECT_EQ(r.in_flight, 1u);
  for (const auto& p : r.phases) {
    SCOPED_TRACE(std::string(files::phase_name(p.phase)));
    EXPECT_EQ(p.ops, 200u);
    EXPECT_TRUE(p.skipped.empty());
    EXPECT_TRUE(p.error.empty());
    EXPECT_EQ(p.in_flight_max, 1u);
    EXPECT_GT(p.seconds, 0);
    EXPECT_LE(p.latency.median_us, p.latency.p99_us);
    EXPECT_LE(p.latency.p99_us, p.latency.max_us);
  }
  EXPECT_EQ(r.phases[0].bytes, 200u * 4096);
  EXPECT_EQ(r.phases[1].bytes, 0u);
  EXPECT_EQ(r.phases[2].bytes, 200u * 4096);  // read whole
  EXPECT_EQ(r.phases[3].bytes, 0u);
}

// A session reporting the round trips of what it negotiated (as NFS's does
// per version), forwarding the rest.
class RoundTripSession : public SlowSession {
 public:
  using SlowSession::SlowSession;
  std::array<RoundTrips, 4> file_round_trips() const override { return trips; }
  std::array<RoundTrips, 4> trips{};
};

TEST_F(FilesPassTest, EachPhaseCarriesTheSessionsRoundTripsElseTheDriverTables) {
  DriverSpec spec = driver_spec("path");
  spec.caps.file_round_trips = {4, 2, 3, 1};
  RoundTripSession s(connect("path"), std::chrono::microseconds(0));
  const FilesPassResult by_table = run_files_pass(s, nullptr, spec, options(20, 100, 2), cancel_);
  s.trips = {{{5, 2}, {1, 0}, {4, 2}, {1, 0}}};
  const FilesPassResult by_session = run_files_pass(s, nullptr, spec, options(20, 100, 2), cancel_);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(by_table.phases[i].round_trips, spec.caps.file_round_trips[i]);
    EXPECT_EQ(by_table.phases[i].serial_round_trips, 0u);
    EXPECT_EQ(by_session.phases[i].round_trips, s.trips[i].total);
    EXPECT_EQ(by_session.phases[i].serial_round_trips, s.trips[i].serial);
  }
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, PathDriverCreatesStatsReadsAndLeavesNothing) {
  auto s = connect("path");
  FilesPassOptions o = random_order(120, 1000, 7, 42);
  std::vector<size_t> seen;
  o.before_phase = [&](Phase p) {
    // Before stat: the files as the create phase left them on the disk.
    if (p == Phase::stat) {
      seen.push_back(
          static_cast<size_t>(std::distance(fs::recursive_directory_iterator(dir_), {})));
      EXPECT_EQ(fs::file_size(dir_ / "pass" / o.tree.file_path(119)), 1000u);
    }
  };
  const FilesPassResult r = run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], 1u + 7 + 120);  // the root, its directories, the files
  for (const auto& p : r.phases) {
    EXPECT_EQ(p.ops, 120u) << files::phase_name(p.phase);
    expect_ordered_latency(p);
  }
  EXPECT_EQ(r.phases[2].bytes, 120u * 1000);
  EXPECT_TRUE(r.leftover.empty()) << r.leftover;
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, SessionsInThreadsKeepSeveralOperationsInFlight) {
  const DriverSpec& spec = driver_spec("null");
  ASSERT_GE(spec.caps.max_in_flight, 4u);
  auto slow = [&] {
    return std::make_unique<SlowSession>(connect("null"), std::chrono::milliseconds(2));
  };
  auto first = slow();
  FilesPassOptions o = options(80, 100, 4, 4);
  const FilesPassResult r = run_counting_opens(*first, spec, o, slow);
  EXPECT_EQ(opened_, 3);
  EXPECT_EQ(r.in_flight, 4u);
  // Create and read sleep 2 ms per file on each of 4 sessions at once.
  for (const auto& p : {r.phases[0], r.phases[1], r.phases[2]}) {
    SCOPED_TRACE(std::string(files::phase_name(p.phase)));
    EXPECT_EQ(p.ops, 80u);
    EXPECT_EQ(p.in_flight_max, 4u);
    EXPECT_GT(p.in_flight_mean, 2.0);
    EXPECT_LE(p.in_flight_mean, 4.0 + 1e-9);
  }
}

// A driver whose sessions cannot share threads (smb) gets its extra sessions
// in helper processes: the same figures, and the helpers end with the pass.
TEST_F(FilesPassTest, SessionsThatCannotShareThreadsRunInHelperProcesses) {
  DriverSpec no_threads = driver_spec("path");
  no_threads.caps.threads = false;
  auto s = connect("path");
  FilesPassOptions o = options(60, 2000, 3, 3);
  size_t during = 0;
  o.before_phase = [&](Phase p) {
    if (p == Phase::read) during = testing::child_pids().size();
  };
  const FilesPassResult r = run_files_pass(
      *s, [&]() -> std::unique_ptr<Session> { return connect("path"); }, no_threads, o, cancel_);
  EXPECT_EQ(during, 2u);
  testing::expect_every_file_done(r, 60, 2000, 3);
  EXPECT_EQ(left(), 0u);
  EXPECT_EQ(testing::child_pids().size(), 0u);
}

// A helper that cannot log in: its error, as it was, here.
TEST_F(FilesPassTest, AForkedSessionThatCannotConnectThrowsItsError) {
  try {
    fork_session([]() -> std::unique_ptr<Session> {
      throw Error(ErrorKind::kConfig, "no such share", "fix the URL");
    });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_EQ(std::string(e.what()), "no such share");
    EXPECT_EQ(e.hint(), "fix the URL");
  }
  EXPECT_EQ(testing::child_pids().size(), 0u);
}

TEST_F(FilesPassTest, InFlightIsCappedAtTheDriversMaximum) {
  DriverSpec one = driver_spec("path");
  one.caps.max_in_flight = 1;
  auto s = connect("path");
  FilesPassOptions o = options(20, 10, 2, 8);
  const FilesPassResult r = run_counting_opens(*s, one, o);
  EXPECT_EQ(opened_, 0);
  EXPECT_EQ(r.in_flight, 1u);
  EXPECT_EQ(r.phases[0].in_flight_max, 1u);
  EXPECT_FALSE(r.in_flight_note.empty());
}

TEST_F(FilesPassTest, AStatRefusedMidwayKeepsItsFiguresAndTheOtherPhasesRun) {
  auto s = std::make_unique<SlowSession>(connect("path"), std::chrono::microseconds(0));
  s->fail_stat_after = 5;
  const FilesPassResult r =
      run_files_pass(*s, nullptr, driver_spec("path"), options(40, 512, 4), cancel_);
  const auto& stat = r.phases[1];
  EXPECT_EQ(stat.ops, 5u);
  EXPECT_FALSE(stat.error.empty());
  EXPECT_TRUE(stat.skipped.empty());
  EXPECT_EQ(r.phases[0].ops, 40u);
  EXPECT_EQ(r.phases[2].ops, 40u);
  EXPECT_EQ(r.phases[3].ops, 40u);
  EXPECT_TRUE(r.phases[2].error.empty());
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, AStatTheServerDoesNotAnswerIsSkippedWithItsReason) {
  auto s = std::make_unique<SlowSession>(connect("path"), std::chrono::microseconds(0));
  s->unsupported_stat = true;
  const FilesPassResult r =
      run_files_pass(*s, nullptr, driver_spec("path"), options(10, 0, 1), cancel_);
  EXPECT_EQ(r.phases[1].ops, 0u);
  EXPECT_FALSE(r.phases[1].skipped.empty());
  EXPECT_TRUE(r.phases[1].error.empty());
  EXPECT_EQ(r.phases[2].ops, 10u);
  EXPECT_EQ(r.phases[2].bytes, 0u);  // size 0: metadata only
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, ADriverWithoutStatSkipsThePhase) {
  DriverSpec no_stat = driver_spec("path");
  no_stat.caps.stat = false;
  auto s = connect("path");
  const FilesPassResult r = run_files_pass(*s, nullptr, no_stat, options(10, 10, 2), cancel_);
  EXPECT_EQ(r.phases[1].ops, 0u);
  EXPECT_FALSE(r.phases[1].skipped.empty());
  EXPECT_EQ(r.phases[3].ops, 10u);
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, TheBudgetStopsAPhaseAndTheOthersUseTheFilesItMade) {
  auto s = std::make_unique<SlowSession>(connect("path"), std::chrono::milliseconds(3));
  FilesPassOptions o = options(1000, 10, 10);
  o.budget_s = 0.2;
  const FilesPassResult r = run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
  const auto& create = r.phases[0];
  EXPECT_TRUE(create.budget_hit);
  EXPECT_GE(create.ops, 100u);  // a tenth of the files before the budget applies
  EXPECT_LT(create.ops, 1000u);
  EXPECT_EQ(r.created, create.ops);
  EXPECT_EQ(r.phases[3].ops, create.ops);
  EXPECT_FALSE(r.phases[3].budget_hit);
  EXPECT_EQ(left(), 0u);
}

TEST_F(FilesPassTest, ACancelledPassRemovesWhatItMadeAndThrows) {
  auto s = connect("path");
  FilesPassOptions o = options(30, 10, 3);
  o.before_phase = [&](Phase p) {
    if (p == Phase::read) cancel_.cancel();
  };
  try {
    run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  EXPECT_EQ(left(), 0u);
}

// The pipeline's way: a request per phase. Create keeps the tree, stat and
// read visit the files it made, delete removes them and the tree; each
// request answers its own phase only.
TEST_F(FilesPassTest, PhaseByPhaseKeepsTheTreeBetweenRequestsAndDeleteRemovesIt) {
  auto s = connect("path");
  FilesPassOptions o = random_order(40, 300, 4, 7);
  uint64_t made = 0;
  for (Phase phase : files::kPhases) {
    o.only = phase;
    o.existing = made;
    const FilesPassResult r = run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
    const auto& st = r.phases[static_cast<size_t>(phase)];
    EXPECT_EQ(st.ops, 40u) << files::phase_name(phase);
    EXPECT_TRUE(st.error.empty()) << st.error;
    for (Phase other : files::kPhases) {
      if (other != phase) {
        EXPECT_EQ(r.phases[static_cast<size_t>(other)].ops, 0u);
      }
    }
    if (phase == Phase::create) made = r.created;
    EXPECT_EQ(r.kept, phase != Phase::remove) << files::phase_name(phase);
    EXPECT_EQ(left(), phase == Phase::remove ? 0u : 1u + 4u + 40u) << files::phase_name(phase);
    if (phase == Phase::read) {
      EXPECT_EQ(st.bytes, 40u * 300u);
    }
  }
  EXPECT_EQ(made, 40u);
}

// A create cut by the budget: the later phases get the count it made and
// visit exactly those files (a missing one would fail the read).
TEST_F(FilesPassTest, PhaseByPhaseAfterABudgetCutVisitsTheFilesTheCreateMade) {
  auto slow = std::make_unique<SlowSession>(connect("path"), std::chrono::milliseconds(3));
  FilesPassOptions o = options(1000, 10, 10);
  o.budget_s = 0.2;
  o.only = Phase::create;
  const FilesPassResult c = run_files_pass(*slow, nullptr, driver_spec("path"), o, cancel_);
  ASSERT_TRUE(c.phases[0].budget_hit);
  ASSERT_LT(c.created, 1000u);
  auto s = connect("path");
  o.budget_s = 0;
  o.existing = c.created;
  for (Phase phase : {Phase::read, Phase::remove}) {
    o.only = phase;
    const FilesPassResult r = run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
    const auto& st = r.phases[static_cast<size_t>(phase)];
    EXPECT_EQ(st.ops, c.created) << files::phase_name(phase);
    EXPECT_TRUE(st.error.empty()) << st.error;
  }
  EXPECT_EQ(left(), 0u);
}

// A create that fails midway leaves nothing for later requests: it removes
// what it made and says the tree is gone.
TEST_F(FilesPassTest, PhaseByPhaseACreateThatFailsRemovesItsTree) {
  auto s = std::make_unique<SlowSession>(connect("path"), std::chrono::microseconds(0));
  s->fail_open_after = 5;
  FilesPassOptions o = options(20, 10, 2);
  o.only = Phase::create;
  const FilesPassResult r = run_files_pass(*s, nullptr, driver_spec("path"), o, cancel_);
  EXPECT_EQ(r.phases[0].ops, 5u);
  EXPECT_FALSE(r.phases[0].error.empty());
  EXPECT_FALSE(r.kept);
  EXPECT_TRUE(r.leftover.empty()) << r.leftover;
  EXPECT_EQ(left(), 0u);
}

// A driver that keeps its operations in flight on one session: the pass
// opens no other, hands it `in_flight` at once, and records them; every file
// is made, read back whole and removed.
TEST_F(FilesPassTest, ADriverThatKeepsOperationsInFlightItselfRunsThemOnOneSession) {
  InFlightSession s([&] { return connect("path"); }, std::chrono::milliseconds(4), cancel_);
  const FilesPassResult r = run_in_flight(s, 96, 1000, 4, 6);
  EXPECT_EQ(r.created, 96u);
  EXPECT_GE(s.at_once_max.load(), 2u);  // they really ran side by side
  EXPECT_LE(s.at_once_max.load(), 6u);
  for (const auto& p : r.phases) {
    SCOPED_TRACE(std::string(files::phase_name(p.phase)));
    // Each operation takes 4 ms or more, six at a time: Little's law's mean
    // over the phase is well above one (and at most six).
    EXPECT_EQ(p.in_flight_max, 6u);
    EXPECT_GT(p.in_flight_mean, 2.0);
    EXPECT_GE(p.latency.median_us, 4000);
    expect_ordered_latency(p);
  }
  EXPECT_EQ(r.phases[0].bytes, 96u * 1000);
  EXPECT_EQ(left(), 0u);
}

// One at a time, such a driver runs the same calls: every operation goes
// through its run_file_ops (one out at once), no other session is opened,
// and the pass records one in flight.
TEST_F(FilesPassTest, ADriverThatKeepsOperationsInFlightItselfRunsOneAtATimeThroughThem) {
  InFlightSession s([&] { return connect("path"); }, std::chrono::microseconds(0), cancel_);
  run_in_flight(s, 24, 500, 3, 1);
  EXPECT_EQ(s.started(), 4u * 24);  // every phase's every file
  EXPECT_EQ(s.at_once_max.load(), 1u);
  EXPECT_EQ(left(), 0u);
}

// A read that brings back other bytes than were written fails the phase, as
// on the one-at-a-time path.
TEST_F(FilesPassTest, InFlightReadsAreCheckedAgainstWhatWasWritten) {
  InFlightSession s([&] { return connect("path"); }, std::chrono::microseconds(0), cancel_);
  FilesPassOptions o = options(12, 300, 1, 4);
  o.before_phase = [&](Phase p) {
    if (p != Phase::read) return;
    // One file's bytes changed behind the pass's back (same size).
    std::fstream f(dir_ / "pass" / o.tree.file_path(5), std::ios::in | std::ios::out);
    f.seekp(10);
    f.put('\xff');
  };
  const FilesPassResult r = run_files_pass(s, nullptr, in_flight_path_spec(), o, cancel_);
  EXPECT_FALSE(r.phases[2].error.empty());
  EXPECT_LT(r.phases[2].ops, 12u);
  EXPECT_EQ(r.phases[3].ops, 12u);
  EXPECT_EQ(left(), 0u);
}

// A create that fails midway ends the phase with its error; the operations
// out at the time end and are counted, and nothing is left.
TEST_F(FilesPassTest, AnInFlightCreateThatFailsEndsThePhaseAndLeavesNothing) {
  InFlightSession s([&] { return connect("path"); }, std::chrono::milliseconds(1), cancel_);
  s.fail_at = 20;
  FilesPassOptions o = options(60, 100, 3, 4);
  const FilesPassResult r = run_files_pass(s, nullptr, in_flight_path_spec(), o, cancel_);
  const auto& create = r.phases[0];
  EXPECT_FALSE(create.error.empty());
  EXPECT_GE(create.ops, 19u);  // those before it, and those out beside it
  EXPECT_LE(create.ops, 19u + 3);
  EXPECT_EQ(r.created, create.ops);
  EXPECT_EQ(r.phases[3].ops, create.ops);
  EXPECT_TRUE(r.leftover.empty()) << r.leftover;
  EXPECT_EQ(left(), 0u);
}

// Cancelled in the middle of the create with operations out: they end, the
// pass removes everything it made and throws kCancelled.
TEST_F(FilesPassTest, AnInFlightPassCancelledMidPhaseRemovesWhatItMadeAndThrows) {
  InFlightSession s([&] { return connect("path"); }, std::chrono::milliseconds(1), cancel_);
  s.cancel_after = 25;
  FilesPassOptions o = options(200, 100, 4, 8);
  Phase last = Phase::create;
  o.before_phase = [&](Phase p) { last = p; };
  try {
    run_files_pass(s, nullptr, in_flight_path_spec(), o, cancel_);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  EXPECT_EQ(last, Phase::create);  // no later phase ran
  EXPECT_EQ(left(), 0u);
}

}  // namespace
}  // namespace cp::transfer
