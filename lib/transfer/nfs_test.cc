// Unit tests of the nfs driver's pure parts (options, error mapping, URLs);
// drivers_lab_test.cc moves files through the lab's real NFS-Ganesha.
#include <gtest/gtest.h>

#include <cerrno>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

const Place kWhere{"198.18.0.1:2049", "/ram", "1000", "run-1/a.dat"};

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::kUsage;
}

TEST(NfsOptions, DefaultsAreTheLinuxClientsSizes) {
  const NfsOptions o = parse_nfs_options({});
  EXPECT_EQ(o.version, 4);
  EXPECT_EQ(o.request_size, 1u << 20);
  EXPECT_GT(o.depth, 1u);
  EXPECT_EQ(o.uid, -1);
  EXPECT_EQ(o.gid, -1);
}

TEST(NfsOptions, ReadsEveryOption) {
  const NfsOptions o = parse_nfs_options({{"version", "3"},
                                          {"request_size", "256KiB"},
                                          {"depth", "4"},
                                          {"uid", "1001"},
                                          {"gid", "1002"},
                                          {"timeout", "5s"}});
  EXPECT_EQ(o.version, 3);
  EXPECT_EQ(o.request_size, 256u << 10);
  EXPECT_EQ(o.depth, 4u);
  EXPECT_EQ(o.uid, 1001);
  EXPECT_EQ(o.gid, 1002);
  EXPECT_DOUBLE_EQ(o.timeout_s, 5);
}

TEST(NfsOptions, RejectsUnknownOptionsAndBadValues) {
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"versoin", "4"},
                                                        {"version", "2"},
                                                        {"version", "4.1"},
                                                        {"depth", "0"},
                                                        {"depth", "5000"},
                                                        {"request_size", "1k"},
                                                        {"request_size", "64MiB"},
                                                        {"uid", "-1"},
                                                        {"uid", "root"},
                                                        {"timeout", "0"}}) {
    EXPECT_EQ(kind_of([&] { parse_nfs_options({{k, v}}); }), ErrorKind::kConfig) << k << "=" << v;
  }
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
