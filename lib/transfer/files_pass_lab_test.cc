// Integration test (root, label integration): the small-file pass
// (transfer/files_pass.h) through the ftp, smb and nfs drivers against the
// lab's real vsftpd, smbd and NFS-Ganesha: every phase runs over every file
// with ordered latencies and the operations it kept in flight on record,
// nothing is left on the server after the pass (its directory is read
// there), and a stat the server refuses midway leaves the other phases'
// figures. Its own lab instance (lab::test_instance()), as drivers_lab_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <exception>
#include <span>

#include <fmt/format.h>

#include "core/process.h"
#include "transfer/files_pass.h"
#include "transfer/protocols.h"
#include "transfer/testing/lab_world.h"

namespace cp::transfer {
namespace {

using namespace testing;  // the lab world (transfer/testing/lab_world.h)
using files::Phase;

class FilesPassLabTest : public LabDriverTest {
 protected:
  FilesPassLabTest() : LabDriverTest("chokepoint-files-pass-test") {}

  // "ftp", "smb", "nfs3", "nfs4" on `medium`.
  Share share_of(const std::string& protocol, const std::string& medium) const {
    const bool nfs = protocol.starts_with("nfs");
    Share s = share(nfs ? "nfs" : protocol, medium);
    if (nfs) {
      s.options["version"] = protocol.substr(3);
      s.options["timeout"] = "10s";
    }
    return s;
  }

  FilesPassOptions options(uint64_t count) const {
    FilesPassOptions o;
    o.tree = {.count = count, .size = 4096, .dirs = 10};
    o.root = run_;  // the pass makes it and removes it
    o.budget_s = 0;
    return o;
  }

  // What is left of the pass's directory on the server ("" when nothing).
  std::string left_on_server(const std::string& medium) const {
    const std::string dir = share_dir(medium) + "/" + run_;
    RunResult r =
        on_server("test -e " + shell_quote(dir) + " && find " + shell_quote(dir) + " || true");
    return r.out;
  }

  FilesPassResult expect_four_in_flight(const std::string& protocol, uint64_t count);
  FilesPassResult run(const Share& sh, const FilesPassOptions& o) {
    auto s = connect(sh);
    return run_files_pass(
        *s, [&] { return connect(sh); }, driver_spec(driver_of(sh)), o, cancel_);
  }
  static std::string driver_of(const Share& sh) { return sh.url.substr(0, sh.url.find(':')); }
};

// The figures, for the reader of the test's output (not asserted).
void print(const std::string& what, const FilesPassResult& r) {
  for (const auto& p : r.phases) {
    fmt::print(
        "  {:12} {:6} {:8.0f} ops/s  latency us median {:.0f} p99 {:.0f} max {:.0f}  in "
        "flight mean {:.2f} max {}\n",
        what, files::phase_name(p.phase), p.ops_per_second(), p.latency.median_us, p.latency.p99_us,
        p.latency.max_us, p.in_flight_mean, p.in_flight_max);
  }
}

void expect_phase_ran(const files::PhaseStats& p, uint64_t count) {
  SCOPED_TRACE(std::string(files::phase_name(p.phase)));
  EXPECT_EQ(p.ops, count);
  EXPECT_TRUE(p.skipped.empty()) << p.skipped;
  EXPECT_TRUE(p.error.empty()) << p.error;
  EXPECT_GT(p.seconds, 0);
  EXPECT_GT(p.latency.median_us, 0);
  EXPECT_LE(p.latency.median_us, p.latency.p99_us);
  EXPECT_LE(p.latency.p99_us, p.latency.max_us);
  EXPECT_GE(p.in_flight_max, 1u);
  EXPECT_GT(p.in_flight_mean, 0);
  EXPECT_LE(p.in_flight_mean, double(p.in_flight_max) + 1e-9);
}

TEST_F(FilesPassLabTest, EachDriverRunsEveryPhaseAndLeavesNothingOnTheServer) {
  const uint64_t count = 200;
  for (const std::string protocol : {"ftp", "smb", "nfs3", "nfs4"}) {
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(protocol + " " + medium);
      FilesPassOptions o = options(count);
      o.random = medium == "disk";
      o.seed = 7;
      std::string seen;
      o.before_phase = [&](Phase p) {
        // The files the create phase made are on the server, of their size.
        if (p == Phase::stat) {
          seen = on_server("find " + shell_quote(share_dir(medium) + "/" + run_) +
                           " -type f -size 4096c | wc -l")
                     .out;
        }
      };
      const FilesPassResult r = run(share_of(protocol, medium), o);
      print(protocol + " " + medium, r);
      EXPECT_EQ(seen, fmt::format("{}\n", count));
      EXPECT_EQ(r.created, count);
      for (const auto& p : r.phases) expect_phase_ran(p, count);
      EXPECT_EQ(r.phases[0].bytes, count * 4096);
      EXPECT_EQ(r.phases[2].bytes, count * 4096);
      EXPECT_EQ(r.in_flight, 1u);  // in_flight 1 asked
      EXPECT_EQ(r.phases[0].in_flight_max, 1u);
      EXPECT_TRUE(r.leftover.empty()) << r.leftover;
      EXPECT_EQ(left_on_server(medium), "");
    }
  }
}

// `count` files through the RAM share of `protocol` with 4 operations asked
// in flight: the pass holds 4, each phase ran with at most 4 at once, the
// creates (several round trips a file) overlapped, and nothing is left.
FilesPassResult FilesPassLabTest::expect_four_in_flight(const std::string& protocol,
                                                        uint64_t count) {
  FilesPassOptions o = options(count);
  o.in_flight = 4;
  const FilesPassResult r = run(share_of(protocol, "ram"), o);
  print(protocol + " ram x4", r);
  EXPECT_EQ(r.in_flight, 4u);
  for (const auto& p : r.phases) {
    expect_phase_ran(p, count);
    EXPECT_LE(p.in_flight_max, 4u);
  }
  EXPECT_GT(r.phases[0].in_flight_max, 1u);
  EXPECT_GT(r.phases[0].in_flight_mean, 1.0);
  EXPECT_EQ(left_on_server("ram"), "");
  return r;
}

// NFS keeps several operations in flight on its one connection (libnfs's
// async calls, NFSv4's OPENs and CLOSEs one at a time): no other session is
// opened, the pass records them in flight, and every file is made, read back
// whole and checked, and removed.
TEST_F(FilesPassLabTest, NfsKeepsSeveralOperationsInFlightOnOneConnection) {
  const uint64_t count = 400;
  for (const std::string protocol : {"nfs3", "nfs4"}) {
    for (const std::string medium : {"ram", "disk"}) {
      SCOPED_TRACE(protocol + " " + medium);
      FilesPassOptions o = options(count);
      o.in_flight = 8;
      o.random = medium == "disk";
      o.seed = 11;
      const Share sh = share_of(protocol, medium);
      auto s = connect(sh);
      int opened = 0;
      const FilesPassResult r = run_files_pass(
          *s,
          [&] {
            ++opened;
            return connect(sh);
          },
          driver_spec("nfs"), o, cancel_);
      print(protocol + " " + medium + " x8", r);
      EXPECT_EQ(opened, 0);
      EXPECT_EQ(r.in_flight, 8u);
      EXPECT_EQ(r.created, count);
      for (const auto& p : r.phases) {
        expect_phase_ran(p, count);
        EXPECT_LE(p.in_flight_max, 8u);
      }
      EXPECT_EQ(r.phases[0].bytes, count * 4096);
      EXPECT_EQ(r.phases[2].bytes, count * 4096);  // each file read whole and checked
      // Every phase overlapped its operations on the one connection.
      for (const auto& p : r.phases) EXPECT_GT(p.in_flight_max, 1u);
      EXPECT_GT(r.phases[1].in_flight_mean, 1.0);  // stat: one GETATTR, nothing serialized
      EXPECT_TRUE(r.leftover.empty()) << r.leftover;
      EXPECT_EQ(left_on_server(medium), "");
    }
  }
}

// The NFS session reports the round trips its chains send (its
// file_round_trips(), which the verdict holds files/s against): each
// chain counts what it sent, and per phase every file cost exactly the
// reported round trips, and the OPENs and CLOSEs that took turns the
// reported serial ones, one at a time and eight in flight, NFSv3 and NFSv4.
// The driver table's figures (the fallback) are NFSv3's.
TEST_F(FilesPassLabTest, NfsSendsTheRoundTripsItReports) {
  const uint64_t count = 60;
  for (const std::string protocol : {"nfs3", "nfs4"}) {
    for (const unsigned in_flight : {1u, 8u}) {
      SCOPED_TRACE(fmt::format("{} x{}", protocol, in_flight));
      FilesPassOptions o = options(count);
      o.in_flight = in_flight;
      const Share sh = share_of(protocol, "ram");
      auto s = connect(sh);
      const FilesPassResult r = run_files_pass(
          *s, [&] { return connect(sh); }, driver_spec("nfs"), o, cancel_);
      print(fmt::format("{} ram x{}", protocol, in_flight), r);
      EXPECT_EQ(r.in_flight, in_flight);
      const auto sent = nfs_file_ops_sent(*s);
      ASSERT_TRUE(sent.has_value());
      const std::array<RoundTrips, 4> rt = s->file_round_trips();
      for (size_t p = 0; p < rt.size(); ++p) {
        SCOPED_TRACE(std::string(files::phase_name(files::kPhases[p])));
        expect_phase_ran(r.phases[p], count);
        EXPECT_GT(rt[p].total, 0u);
        EXPECT_EQ((*sent)[p].ops, count);
        EXPECT_EQ((*sent)[p].round_trips, count * rt[p].total);
        EXPECT_EQ((*sent)[p].serial, count * rt[p].serial);
        EXPECT_GE((*sent)[p].calls, (*sent)[p].round_trips);
        if (protocol == "nfs3") {
          EXPECT_EQ(driver_spec("nfs").caps.file_round_trips[p], rt[p].total);
          EXPECT_EQ(rt[p].serial, 0u);  // NFSv3 keeps no open state
        }
      }
      EXPECT_TRUE(r.leftover.empty()) << r.leftover;
      EXPECT_EQ(left_on_server("ram"), "");
    }
  }
}

// A small-file create never touches a file it did not make: a file already
// on the server at the path fails the create (NFSv3 GUARDED, NFSv4
// EXCLUSIVE4) and keeps its bytes.
TEST_F(FilesPassLabTest, NfsCreateRefusesAFileAlreadyThere) {
  const std::string dir = share_dir("ram") + "/" + run_;
  for (const std::string protocol : {"nfs3", "nfs4"}) {
    SCOPED_TRACE(protocol);
    ASSERT_EQ(on_server(fmt::format("mkdir -p {0} && printf keep > {0}/f && chown -R {1}: {0}",
                                    shell_quote(dir), g_world->lab.share_user))
                  .exit_code,
              0);
    auto s = connect(share_of(protocol, "ram"));
    const std::string data(4096, 'x');
    FileOps ops;
    ops.op = FileOp::kCreate;
    ops.data = {data.data(), data.size()};
    bool given = false;
    ops.next = [&](uint64_t& id, std::string& path) {
      if (given) return false;
      given = true;
      id = 0;
      path = run_ + "/f";
      return true;
    };
    int ended = 0;
    std::exception_ptr error;
    ops.ended = [&](uint64_t, std::span<const char>, std::exception_ptr e) {
      ++ended;
      error = e;
    };
    s->run_file_ops(ops);
    EXPECT_EQ(ended, 1);
    EXPECT_TRUE(error != nullptr);
    EXPECT_EQ(on_server("cat " + shell_quote(dir + "/f")).out, "keep");
    ASSERT_EQ(on_server("rm -rf " + shell_quote(dir)).exit_code, 0);
  }
}

// SMB keeps several operations in flight with a session each, the extra
// ones in helper processes (libsmbclient's contexts cannot share threads).
TEST_F(FilesPassLabTest, SmbKeepsSeveralOperationsInFlightThroughHelperProcesses) {
  EXPECT_FALSE(expect_four_in_flight("smb", 200).in_flight_note.empty());
}

// FTP keeps one operation at a time (one control connection), says so and
// uses one session whatever is asked.
TEST_F(FilesPassLabTest, FtpKeepsOneOperationInFlightAndSaysSo) {
  FilesPassOptions o = options(20);
  o.in_flight = 4;
  const FilesPassResult r = run(share_of("ftp", "ram"), o);
  EXPECT_EQ(r.in_flight, 1u);
  EXPECT_FALSE(r.in_flight_note.empty());
  for (const auto& p : r.phases) {
    expect_phase_ran(p, 20);
    EXPECT_EQ(p.in_flight_max, 1u);
  }
  EXPECT_EQ(left_on_server("ram"), "");
}

// The server refuses to stat the files of one directory (its mode 000 while
// the stat phase runs): the phase stops there with the error and the files
// it did; create, read and delete keep their full figures, and nothing is
// left. With NFS's eight in flight on one connection, the operations out
// beside the first refused one end too (d0004's first files may be stat-ed).
TEST_F(FilesPassLabTest, AStatRefusedMidwayLeavesTheOtherPhasesFigures) {
  const uint64_t count = 50;
  const std::pair<std::string, unsigned> cases[] = {
      {"ftp", 1}, {"smb", 1}, {"nfs4", 1}, {"nfs3", 8}, {"nfs4", 8}};
  for (const auto& [protocol, in_flight] : cases) {
    SCOPED_TRACE(fmt::format("{} x{}", protocol, in_flight));
    FilesPassOptions o = options(count);
    o.in_flight = in_flight;
    // Sequential is a directory at a time: the stat stops at d0003's first file.
    const std::vector<uint64_t> order = files::directory_order(o.tree);
    const auto before = uint64_t(std::find_if(order.begin(), order.end(),
                                              [&](uint64_t i) { return o.tree.dir_of(i) == 3; }) -
                                 order.begin());
    const std::string locked = share_dir("ram") + "/" + run_ + "/" + o.tree.dir_name(3);
    o.before_phase = [&](Phase p) {
      if (p == Phase::stat) {
        ASSERT_EQ(on_server("chmod 000 " + shell_quote(locked)).exit_code, 0);
      }
      if (p == Phase::read) {
        ASSERT_EQ(on_server("chmod 755 " + shell_quote(locked)).exit_code, 0);
      }
    };
    const FilesPassResult r = run(share_of(protocol, "ram"), o);
    const files::PhaseStats& stat = r.phases[1];
    EXPECT_GE(stat.ops, before);
    EXPECT_LE(stat.ops, before + in_flight - 1);
    EXPECT_FALSE(stat.error.empty());
    EXPECT_TRUE(stat.skipped.empty());
    expect_phase_ran(r.phases[0], count);
    expect_phase_ran(r.phases[2], count);
    expect_phase_ran(r.phases[3], count);
    EXPECT_EQ(left_on_server("ram"), "");
  }
}

}  // namespace
}  // namespace cp::transfer
