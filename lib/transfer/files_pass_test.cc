// The small-file pass over a share (transfer/files_pass.h) with the null
// driver (the framework's own cost) and the path driver on a local
// directory (real files: what is left after the pass is read back).
#include "transfer/files_pass.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.h"

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
  bool unsupported_stat = false;

 private:
  std::unique_ptr<Session> inner_;
  std::chrono::microseconds delay_;
  std::atomic<uint64_t> stats_{0};
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
  FilesPassOptions options(uint64_t count, uint64_t size, uint64_t dirs) const {
    FilesPassOptions o;
    o.tree = {.count = count, .size = size, .dirs = dirs};
    o.root = "pass";
    o.budget_s = 0;
    return o;
  }
  // Entries left under the share's directory.
  size_t left() const {
    return static_cast<size_t>(std::distance(fs::recursive_directory_iterator(dir_), {}));
  }
  fs::path dir_;
  CancelToken cancel_;
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

TEST_F(FilesPassTest, PathDriverCreatesStatsReadsAndLeavesNothing) {
  auto s = connect("path");
  FilesPassOptions o = options(120, 1000, 7);
  o.random = true;
  o.seed = 42;
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
  FilesPassOptions o = options(80, 100, 4);
  o.in_flight = 4;
  int opened = 0;
  const FilesPassResult r = run_files_pass(
      *first,
      [&]() -> std::unique_ptr<Session> {
        ++opened;
        return slow();
      },
      spec, o, cancel_);
  EXPECT_EQ(opened, 3);
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

TEST_F(FilesPassTest, InFlightIsCappedAtTheDriversMaximum) {
  DriverSpec one = driver_spec("path");
  one.caps.max_in_flight = 1;
  auto s = connect("path");
  FilesPassOptions o = options(20, 10, 2);
  o.in_flight = 8;
  int opened = 0;
  const FilesPassResult r = run_files_pass(
      *s,
      [&]() -> std::unique_ptr<Session> {
        ++opened;
        return connect("path");
      },
      one, o, cancel_);
  EXPECT_EQ(opened, 0);
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

}  // namespace
}  // namespace cp::transfer
