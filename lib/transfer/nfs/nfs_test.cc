// Unit tests of the nfs driver's pure parts (options, error mapping, URLs);
// drivers_lab_test.cc moves files through the lab's real NFS-Ganesha.
#include <gtest/gtest.h>

#include <cerrno>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/testing/error_of.h"

namespace cp::transfer {
namespace {

using testing::kind_of;

const Place kWhere{"198.18.0.1:2049", "/ram", "1000", "run-1/a.dat"};

TEST(NfsOptions, DefaultsAreTheLinuxClientsSizes) {
  const NfsOptions o = parse_nfs_options({});
  EXPECT_EQ(o.version, 4);
  EXPECT_EQ(o.request_size, 1u << 20);
  EXPECT_EQ(o.depth, 0u);  // auto: sized to the path at mount
  EXPECT_EQ(o.path_rate, 0);
  EXPECT_EQ(o.uid, -1);
  EXPECT_EQ(o.gid, -1);
}

TEST(NfsOptions, ReadsEveryOption) {
  const NfsOptions o = parse_nfs_options({{"version", "3"},
                                          {"request_size", "256KiB"},
                                          {"depth", "4"},
                                          {"uid", "1001"},
                                          {"gid", "1002"},
                                          {"timeout", "5s"},
                                          {"path_rate", "1gbit"}});
  EXPECT_EQ(o.version, 3);
  EXPECT_EQ(o.request_size, 256u << 10);
  EXPECT_EQ(o.depth, 4u);
  EXPECT_EQ(o.uid, 1001);
  EXPECT_EQ(o.gid, 1002);
  EXPECT_DOUBLE_EQ(o.timeout_s, 5);
  EXPECT_DOUBLE_EQ(o.path_rate, 125e6);  // bytes/s
  EXPECT_EQ(parse_nfs_options({{"depth", "auto"}}).depth, 0u);
}

TEST(NfsAutoDepth, AShortOrUnknownPathKeepsTheMinimum) {
  EXPECT_EQ(nfs_auto_depth(0, 1 << 20, 0), kNfsMinDepth);            // RTT unknown
  EXPECT_EQ(nfs_auto_depth(0.0001, 1 << 20, 125e6), kNfsMinDepth);   // 0.1 ms at 1 Gbit/s
  EXPECT_EQ(nfs_auto_depth(0.0002, 1 << 20, 1.25e9), kNfsMinDepth);  // 0.2 ms at 10 Gbit/s
}

TEST(NfsAutoDepth, CoversTwiceThePathsBytesPlusTwoRequests) {
  // 10 ms at 1 Gbit/s: 1.25 MB on the path, 2.5 MB = 3 requests of 1 MiB, + 2.
  EXPECT_EQ(nfs_auto_depth(0.010, 1 << 20, 125e6), 5u);
  // 2 ms at 10 Gbit/s: 2.5 MB, 5 MB = 5 requests, + 2.
  EXPECT_EQ(nfs_auto_depth(0.002, 1 << 20, 1.25e9), 7u);
  // Smaller requests: more of them for the same bytes (10 ms, 1 Gbit/s, 256 KiB).
  EXPECT_EQ(nfs_auto_depth(0.010, 256 << 10, 125e6), 2 + 10u);
  // The rate unknown: 10 Gbit/s is assumed (1 ms: 1.25 MB, twice = 3 requests, + 2).
  EXPECT_EQ(nfs_auto_depth(0.001, 1 << 20, 0), nfs_auto_depth(0.001, 1 << 20, kNfsAssumedRate));
  EXPECT_EQ(nfs_auto_depth(0.001, 1 << 20, 0), 5u);
}

TEST(NfsAutoDepth, StaysWithinItsMemoryBound) {
  // 100 ms at 10 Gbit/s would want ~240 requests of 1 MiB: 32 MiB of them.
  EXPECT_EQ(nfs_auto_depth(0.100, 1 << 20, 1.25e9), kNfsAutoMemory / (1 << 20));
  // Requests larger than the bound: one.
  EXPECT_EQ(nfs_auto_depth(0.100, 64ull << 20, 1.25e9), 1u);
}

TEST(NfsOptions, RejectsUnknownOptionsAndBadValues) {
  // An option the driver does not know, or a value out of its range.
  const std::pair<std::string, std::string> refused[] = {
      {"versoin", "4"},  {"version", "2"},       {"version", "4.1"},        {"depth", "0"},
      {"depth", "5000"}, {"request_size", "1k"}, {"request_size", "64MiB"}, {"uid", "-1"},
      {"uid", "root"},   {"timeout", "0"}};
  for (const auto& [k, v] : refused)
    EXPECT_EQ(kind_of([&] { parse_nfs_options({{k, v}}); }), ErrorKind::kConfig) << k << "=" << v;
}

TEST(NfsError, MountFailuresAreConfigErrorsAndTheRestIo) {
  // A missing export at mount: the plan is wrong.
  EXPECT_EQ(nfs_error(ENOENT, "NFS4ERR_NOENT", Step::kConnect, kWhere).kind(), ErrorKind::kConfig);
  EXPECT_EQ(
      nfs_error(EFAULT, "mount/mnt call failed with \"MNT3ERR_NOENT\"", Step::kConnect, kWhere)
          .kind(),
      ErrorKind::kConfig);
  EXPECT_EQ(nfs_error(EACCES, "", Step::kConnect, kWhere).kind(), ErrorKind::kConfig);
  // A closed port, a lost server, a denied file, a full disk: the run's I/O failed.
  EXPECT_EQ(nfs_error(ECONNREFUSED, "", Step::kConnect, kWhere).kind(), ErrorKind::kIo);
  EXPECT_EQ(nfs_error(EIO, "nfs_service failed", Step::kConnect, kWhere).kind(), ErrorKind::kIo);
  EXPECT_EQ(nfs_error(ECONNRESET, "", Step::kRead, kWhere).kind(), ErrorKind::kIo);
  EXPECT_EQ(nfs_error(EACCES, "NFS4ERR_ACCESS", Step::kOpenRead, kWhere).kind(), ErrorKind::kIo);
  EXPECT_EQ(nfs_error(EROFS, "", Step::kOpenWrite, kWhere).kind(), ErrorKind::kIo);
  EXPECT_EQ(nfs_error(ENOSPC, "", Step::kWrite, kWhere).kind(), ErrorKind::kIo);
  // Every error says how to fix it.
  EXPECT_FALSE(nfs_error(EIO, "", Step::kRead, kWhere).hint().empty());
}

TEST(NfsDriver, RefusesUrlsItCannotMountBeforeConnecting) {
  auto driver = make_driver("nfs");
  EXPECT_EQ(driver->name(), "nfs");
  EXPECT_TRUE(driver_spec("nfs").caps.random_access);
  CancelToken cancel;
  for (const std::string url :
       {"smb://127.0.0.1/ram", "nfs://127.0.0.1", "nfs://127.0.0.1/", "nfs://127.0.0.1:2050/ram"}) {
    Share share{"n", url, "", "", {}};
    EXPECT_EQ(kind_of([&] { driver->connect(share, cancel); }), ErrorKind::kConfig) << url;
  }
  Share bad_option{"n", "nfs://127.0.0.1/ram", "", "", {{"rsize", "1MiB"}}};
  EXPECT_EQ(kind_of([&] { driver->connect(bad_option, cancel); }), ErrorKind::kConfig);
  Share unknown_user{"n", "nfs://127.0.0.1/ram", "no-such-user-chokepoint", "", {}};
  EXPECT_EQ(kind_of([&] { driver->connect(unknown_user, cancel); }), ErrorKind::kConfig);
}

}  // namespace
}  // namespace cp::transfer
