// What the drivers' lab tests (drivers_lab_test, servers_lab_test) share: a
// lab of their own, brought up on first use and taken down at the end of
// the program, commands in the server host, files of known content put and
// read through a driver with their checksums, and a fixture that runs the
// test's thread in the client host's network namespace (the servers listen
// on the data address only, which the root namespace cannot reach).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/process.h"
#include "lab/lab.h"
#include "transfer/driver.h"

namespace cp::transfer::testing {

constexpr uint64_t kMB10 = 10'000'000;
constexpr uint64_t kMB100 = 100'000'000;
constexpr size_t kBlock = 1 << 20;

struct LabWorld {
  std::string skip;   // non-empty: why the tests cannot run (not root)
  std::string error;  // non-empty: the lab would not come up (each test fails with it)
  bool own = false;   // the lab is this program's
  lab::LabState lab;
  std::string password;
  std::string dir;  // this program's files, 0755; the lab is in dir/lab
};
// Set by bring_up_lab; the program's lab.
extern LabWorld* g_world;

// The lab test_instance() names, in /var/tmp/<prefix>-<pid>/lab, brought up
// once; a gtest environment takes it down (and checks that its share user is
// gone) and removes the dir at the end of the program.
void bring_up_lab(const std::string& prefix);

// Runs `command` by sh in the server host's mount namespace.
RunResult on_server(const std::string& command, const std::string& input = {});
// The checksum of a file on the server, "<xxh3>/<bytes>".
std::string server_checksum(const std::string& path);
// `size` pattern bytes of `seed`, and the checksum of a string.
std::string pattern(uint64_t size, uint64_t seed);
std::string checksum_of(const std::string& data);
// Streams `size` pattern bytes to `rel` in 1 MiB blocks; their checksum.
std::string put(Session& s, const std::string& rel, uint64_t size, uint64_t seed);
// Reads `rel` to its end in 1 MiB blocks (telling the driver to expect
// `size_hint` bytes, 0: nothing); the checksum of what came.
std::string get(Session& s, const std::string& rel, uint64_t size_hint = 0);
// The lab's ram or disk share directory on the server.
std::string share_dir(const std::string& medium);

// The lab's smbd runs with `lines` added to smb.conf's [global] section
// (smbcontrol reload-config, in place) while this lives; the file as it was
// and a reload after. set() replaces the lines.
class SambaGlobals {
 public:
  explicit SambaGlobals(const std::string& lines);
  ~SambaGlobals();
  void set(const std::string& lines);

 private:
  void reload(const std::string& text);
  std::string conf_, original_;
};

// A test on the lab: SetUp brings it up (fails with its error, skips when
// not root) and moves the thread into the client host's network namespace;
// TearDown moves it back and removes the test's run_ directory from both
// shares.
class LabDriverTest : public ::testing::Test {
 protected:
  explicit LabDriverTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override;
  // The share `path` of `protocol` on the lab's server (port 0: the default).
  Share share(const std::string& protocol, const std::string& path, int port = 0) const;
  std::unique_ptr<Session> connect(const Share& s);

  std::string run_;  // this test's directory in each share
  CancelToken cancel_;

 private:
  std::string prefix_;
  int self_ns_ = -1;
};

}  // namespace cp::transfer::testing
