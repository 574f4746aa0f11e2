// Unit tests of the smb driver's options and connections=auto
// (smb_options.cc); drivers_lab_test.cc moves files through a real smbd.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

TEST(SmbDriver, RefusesBadUrlsAndOptions) {
  auto d = make_driver("smb");
  EXPECT_TRUE(driver_spec(d->name()).caps.random_access);
  CancelToken cancel;
  Share s;
  s.url = "ftp://h/x";
  EXPECT_THROW(d->connect(s, cancel), Error);
  s.url = "smb://h";
  EXPECT_THROW(d->connect(s, cancel), Error);
  s.url = "smb://h/share";
  s.options["io_size"] = "1";
  EXPECT_THROW(d->connect(s, cancel), Error);
  s.options["io_size"] = "1MiB";
  s.options["encrypt"] = "maybe";
  EXPECT_THROW(d->connect(s, cancel), Error);
}

// The driver reads its options through the table (option_number): a value out
// of the declared range gives the error check_options gives at plan read,
// even to a caller that skipped the check (the raw driver, not make_driver's).
TEST(SmbDriver, OutOfRangeOptionsGiveTheTablesErrorWithoutThePlan) {
  const DriverSpec& spec = driver_spec("smb");
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"io_size", "1k"},
                                                        {"io_size", "65MiB"},
                                                        {"connections", "0"},
                                                        {"connections", "17"},
                                                        {"timeout", "0"},
                                                        {"path_rate", "fast"}}) {
    SCOPED_TRACE(key + "=" + value);
    Share s;
    s.url = "smb://127.0.0.1/share";
    s.options[key] = value;
    std::string table_what, table_hint;
    try {
      check_options(spec, s.options);
      ADD_FAILURE() << "the table accepted it";
    } catch (const Error& e) {
      table_what = e.what();
      table_hint = e.hint();
    }
    CancelToken cancel;
    try {
      spec.make()->connect(s, cancel);
      ADD_FAILURE() << "the driver accepted it";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      EXPECT_EQ(std::string(e.what()), table_what);
      EXPECT_EQ(e.hint(), table_hint);
    }
  }
}

// connections=auto: one connection on a short path; on a long one a call
// being handed over plus enough others to cover its round trip.
TEST(SmbAutoConnections, OneOnAShortPathMoreOnALongOne) {
  constexpr uint64_t k8MiB = 8 << 20;
  EXPECT_EQ(smb_auto_connections(0.0002, k8MiB, 0), 1u);  // LAN, rate unknown
  EXPECT_EQ(smb_auto_connections(0.0002, k8MiB, 125e6), 1u);
  EXPECT_EQ(smb_auto_connections(0, k8MiB, 0), 1u);      // round trip unknown
  EXPECT_EQ(smb_auto_connections(0.010, k8MiB, 0), 3u);  // 10 ms, rate unknown
  // 1 Gbit/s: an 8 MiB call takes 67 ms, longer than a 2 or a 10 ms round trip.
  EXPECT_EQ(smb_auto_connections(0.002, k8MiB, 125e6), 3u);
  EXPECT_EQ(smb_auto_connections(0.010, k8MiB, 125e6), 3u);
  // 10 Gbit/s, 10 ms: a 6.7 ms call; 2 + ceil(10 / 6.7) = 4.
  EXPECT_EQ(smb_auto_connections(0.010, k8MiB, 1.25e9), 4u);
}

TEST(SmbAutoConnections, HeldToTheMemoryCapAndTheMost) {
  // 10 Gbit/s over 100 ms would want 17 calls of 8 MiB: 64 MiB holds 8.
  EXPECT_EQ(smb_auto_connections(0.100, 8 << 20, 1.25e9), kSmbAutoMemory / (8 << 20));
  // 1 MiB calls: the count is held to kSmbMaxConnections.
  EXPECT_EQ(smb_auto_connections(0.100, 1 << 20, 1.25e9), kSmbMaxConnections);
  // Calls larger than the cap: still one connection, never none.
  EXPECT_EQ(smb_auto_connections(0.100, 128ull << 20, 1.25e9), 1u);
}

}  // namespace
}  // namespace cp::transfer
