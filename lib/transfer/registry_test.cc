// The drivers' declared data: scheme -> driver, option checks the same for
// every driver, the listing `chokepoint drivers` prints.
#include <gtest/gtest.h>

#include <cstring>

#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/text.h"
#include "transfer/afp/afp.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

// The kind of Error f throws; nullopt when it throws none.
std::optional<ErrorKind> kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

TEST(Registry, EveryDeclaredUrlPrefixMapsToItsDriver) {
  std::set<std::string_view> names;
  for (const DriverSpec* d : driver_specs()) {
    EXPECT_TRUE(names.insert(d->name).second) << d->name << " listed twice";
    ASSERT_FALSE(d->url_prefixes.empty()) << d->name;
    for (std::string_view p : d->url_prefixes) {
      EXPECT_EQ(driver_for_url(std::string(p) + "host/share").name, d->name) << p;
    }
    EXPECT_EQ(&driver_spec(d->name), d);
    EXPECT_EQ(make_driver(std::string(d->name))->name(), d->name);
  }
  EXPECT_EQ(driver_for_url("ftps://nas/ram").name, "ftp");
  EXPECT_EQ(driver_for_url("/mnt/nas").name, "path");
  EXPECT_EQ(driver_for_url("null:").name, "null");
  for (const char* bad : {"nfs4://nas/x", "gopher://h/", "", "mnt/nas", "SMB://h/s"}) {
    EXPECT_EQ(kind_of([&] { driver_for_url(bad); }), ErrorKind::kConfig) << bad;
  }
}

TEST(Registry, EveryDriverTakesItsOwnDefaultsAndRejectsUnknownOptions) {
  for (const DriverSpec* d : driver_specs()) {
    SCOPED_TRACE(std::string(d->name));
    std::map<std::string, std::string> defaults;
    for (const OptionSpec& o : d->options) {
      if (!o.fallback.empty()) defaults[std::string(o.name)] = o.fallback;
    }
    EXPECT_NO_THROW(check_options(*d, defaults));
    EXPECT_NO_THROW(check_options(*d, {}));
    EXPECT_EQ(kind_of([&] { check_options(*d, {{"frobnicate", "1"}}); }), ErrorKind::kConfig);
    // make_driver's driver checks before it connects: no network is touched.
    Share share;
    share.url = std::string(d->url_prefixes.front()) + "127.0.0.1/x";
    share.options["frobnicate"] = "1";
    CancelToken cancel;
    EXPECT_EQ(kind_of([&] { make_driver(std::string(d->name))->connect(share, cancel); }),
              ErrorKind::kConfig);
  }
}

TEST(Registry, OptionValuesAreCheckedByTypeAndRange) {
  const DriverSpec& smb = driver_spec("smb");
  EXPECT_NO_THROW(check_options(smb, {{"connections", "auto"}, {"io_size", "4MiB"}}));
  EXPECT_NO_THROW(check_options(smb, {{"connections", "16"}, {"path_rate", "1gbit"}}));
  EXPECT_NO_THROW(check_options(smb, {{"min_protocol", "SMB3_00"}, {"timeout", "500ms"}}));
  for (const auto& [key, value] :
       std::map<std::string, std::string>{{"connections", "17"},     // over the range
                                          {"connections", "0"},      // under it
                                          {"connections", "some"},   // neither a count nor a word
                                          {"io_size", "1k"},         // under 4 KiB
                                          {"io_size", "lots"},       // not a size
                                          {"encrypt", "maybe"},      // not an allowed value
                                          {"min_protocol", "SMB9"},  // likewise
                                          {"timeout", "0"},          // not positive
                                          {"path_rate", "fast"}}) {  // not a rate
    SCOPED_TRACE(key + "=" + value);
    EXPECT_EQ(kind_of([&] { check_options(smb, {{key, value}}); }), ErrorKind::kConfig);
  }
  const DriverSpec& ftp = driver_spec("ftp");
  EXPECT_NO_THROW(check_options(ftp, {{"insecure", "yes"}}));
  EXPECT_EQ(kind_of([&] { check_options(ftp, {{"insecure", "maybe"}}); }), ErrorKind::kConfig);
  EXPECT_EQ(kind_of([&] {
              check_options(driver_spec("path"), {{"size", "1"}});
            }),
            ErrorKind::kConfig);
}

// The declared ranges agree with the drivers' own option parsers at the edges.
TEST(Registry, DeclaredRangesMatchTheNfsAndAfpParsers) {
  using Options = std::map<std::string, std::string>;
  const std::map<std::string, std::function<void(const Options&)>> parse{
      {"nfs", [](const Options& o) { parse_nfs_options(o); }},
      {"afp", [](const Options& o) { afp::parse_afp_options(o); }}};
  struct Case {
    std::string driver, key, value;
    bool ok;
  };
  for (const Case& c : std::vector<Case>{{"nfs", "depth", "1", true},
                                         {"nfs", "depth", std::to_string(kNfsMaxDepth), true},
                                         {"nfs", "depth", std::to_string(kNfsMaxDepth + 1), false},
                                         {"nfs", "version", "3", true},
                                         {"nfs", "version", "2", false},
                                         {"nfs", "request_size", "16MiB", true},
                                         {"nfs", "request_size", "17MiB", false},
                                         {"afp", "depth", "64", true},
                                         {"afp", "depth", "65", false},
                                         {"afp", "request_size", "4k", true},
                                         {"afp", "request_size", "4095", false},
                                         {"afp", "tickle_interval", "0", false}}) {
    SCOPED_TRACE(c.driver + ": " + c.key + "=" + c.value);
    const Options o{{c.key, c.value}};
    EXPECT_EQ(kind_of([&] { check_options(driver_spec(c.driver), o); }) == std::nullopt, c.ok);
    EXPECT_EQ(kind_of([&] { parse.at(c.driver)(o); }) == std::nullopt, c.ok);
  }
}

TEST(Registry, ListingNamesEveryDriverAndOption) {
  const std::string text = describe_drivers();
  for (const DriverSpec* d : driver_specs()) {
    EXPECT_NE(text.find(std::string(d->name) + ": "), std::string::npos) << d->name;
    for (const OptionSpec& o : d->options) {
      EXPECT_NE(text.find("  " + std::string(o.name) + "  "), std::string::npos) << o.name;
    }
  }
}

TEST(Registry, OptionValueFallsBackToTheDeclaredDefault) {
  const DriverSpec& smb = driver_spec("smb");
  EXPECT_EQ(option_value(smb, {}, "connections"), "auto");
  EXPECT_EQ(option_value(smb, {{"connections", "4"}}, "connections"), "4");
  EXPECT_EQ(option_value(smb, {}, "io_size"), "");  // chosen at run time
  EXPECT_EQ(option_value(driver_spec("ftp"), {}, "connect_timeout"), "15s");
}

TEST(Registry, OptionNumberReadsTheValueInItsUnitOrTheDefault) {
  const DriverSpec& smb = driver_spec("smb");
  EXPECT_EQ(option_number(smb, {{"io_size", "4MiB"}}, "io_size"), 4.0 * (1 << 20));  // bytes
  EXPECT_EQ(option_number(smb, {}, "io_size"), std::nullopt);                        // no default
  EXPECT_EQ(option_number(smb, {}, "connections"), std::nullopt);  // default: auto
  EXPECT_EQ(option_number(smb, {{"connections", "4"}}, "connections"), 4.0);
  EXPECT_EQ(option_number(smb, {}, "timeout"), 30.0);                         // the declared 30s
  EXPECT_EQ(option_number(smb, {{"path_rate", "1gbit"}}, "path_rate"), 1e9);  // bit/s
  EXPECT_EQ(kind_of([&] {
              option_number(smb, {{"connections", "17"}}, "connections");
            }),
            ErrorKind::kConfig);
  EXPECT_EQ(kind_of([&] {
              option_number(smb, {{"timeout", "soon"}}, "timeout");
            }),
            ErrorKind::kConfig);
}

// docs/drivers.md's "Driver options" block is this output, verbatim.
TEST(Registry, DriversPageHoldsTheListingVerbatim) {
  std::optional<std::string> page = read_file(CP_DRIVERS_DOC);
  ASSERT_TRUE(page.has_value()) << CP_DRIVERS_DOC;
  EXPECT_NE(page->find("```\n" + describe_drivers() + "```\n"), std::string::npos)
      << "update docs/drivers.md's Driver options block from `chokepoint drivers`";
}

// A driver without request buffers of its own: write_buffer lends the File's
// buffer and commit_write passes exactly the committed bytes to write().
// Every driver names its protocol for reports; a driver with a
// negotiated-status request declares both its body and its reader.
TEST(Registry, EveryDriverDeclaresItsDisplayNameAndWholeHooks) {
  for (const DriverSpec* d : driver_specs()) {
    EXPECT_FALSE(d->display.empty()) << d->name;
    EXPECT_EQ(protocol_display(d->name), d->display);
    if (!d->negotiated.request.empty()) {
      EXPECT_NE(d->negotiated.body, nullptr) << d->name;
      EXPECT_NE(d->negotiated.read, nullptr) << d->name;
    }
  }
  // A layer no driver of this build has: its name in capitals.
  EXPECT_EQ(protocol_display("webdav"), "WEBDAV");
}

// A driver registered at run time joins the table: found by name and URL,
// listed, its options checked like a built-in's.
TEST(Registry, RegisteredDriverJoinsTheTable) {
  static constexpr std::string_view kPrefixes[] = {"registered-test:"};
  static const DriverSpec kSpec = {
      .name = "registered-test",
      .summary = "a test driver",
      .url_prefixes = kPrefixes,
      .make = [] { return driver_spec("null").make(); },
      .display = "Registered",
  };
  ASSERT_EQ(find_driver_spec("registered-test"), nullptr);
  register_driver(kSpec);
  EXPECT_EQ(&driver_spec("registered-test"), &kSpec);
  EXPECT_EQ(&driver_for_url("registered-test:x"), &kSpec);
  EXPECT_EQ(driver_names().back(), "registered-test");
  EXPECT_EQ(protocol_display("registered-test"), "Registered");
  EXPECT_EQ(kind_of([] { check_options(kSpec, {{"depth", "8"}}); }), ErrorKind::kConfig);
  EXPECT_NE(make_driver("registered-test"), nullptr);
}

TEST(File, DefaultWriteBufferHandsTheCommittedBytesToWrite) {
  struct Recorder : File {
    std::string written;
    size_t read(char*, size_t) override { return 0; }
    void write(const char* buf, size_t n) override { written.append(buf, n); }
    void close() override {}
  } f;
  std::span<char> room = f.write_buffer(8);
  ASSERT_EQ(room.size(), 8u);
  std::memcpy(room.data(), "abcdefgh", 8);
  f.commit_write(5);
  room = f.write_buffer(3);
  ASSERT_EQ(room.size(), 3u);
  std::memcpy(room.data(), "xyz", 3);
  f.commit_write(3);
  EXPECT_EQ(f.written, "abcdexyz");
}

}  // namespace
}  // namespace cp::transfer
