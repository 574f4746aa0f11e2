// Test-only: a small AFP 3.4 server on 127.0.0.1 serving real directories,
// for what the captures do not show: pipelined reads and writes, errors,
// tickles, attentions, every UAM's server side. Its replies follow
// netatalk 4.4's (afp_test_server_test holds them against the captures
// where they overlap). Each connection has a thread of its own; DSIGetStatus
// connections are closed after the reply, as netatalk does.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "transfer/testing/loopback.h"

namespace cp::transfer::testing {

struct TestServerConfig {
  std::string server_name = "AFPTEST";
  std::string machine_type = "Netatalk4.4.0";
  std::vector<std::string> versions = {"AFP2.2", "AFPX03", "AFP3.1", "AFP3.2", "AFP3.3", "AFP3.4"};
  std::vector<std::string> uams = {"DHX2", "DHCAST128", "Cleartxt Passwrd", "No User Authent"};
  // name -> directory; volume IDs 1, 2, ... in this order, listed by name.
  std::vector<std::pair<std::string, std::string>> volumes;
  std::map<std::string, std::string> users;  // user -> password
  uint32_t quantum = 1u << 20;
  uint16_t port = 0;  // 0: an ephemeral port
  // Pipelining probe: hold FPReadExt/FPWriteExt replies until this many are
  // queued, another kind of request arrives, or the client is idle for
  // hold_idle_ms (the last only keeps a short tail from stalling).
  unsigned hold = 0;
  int hold_idle_ms = 500;
  bool reverse_held = false;  // answer a held batch last-first
  int tickle_every = 0;       // send a DSITickle before every n-th reply
  int attention_after = 0;    // after the n-th request, send a DSIAttention
  uint16_t attention_code = 0x8000;
  uint64_t disk_full_after = std::numeric_limits<uint64_t>::max();  // bytes written
  std::set<std::string> deny;  // "dir/file" paths inside a volume: kFPAccessDenied
  int drop_after = 0;          // close the connection after the n-th request
  // A stand-in for the network's round trip: every message to the client
  // leaves this long after the request it answers arrived (ms), whatever
  // else is waiting, as a delay line would; 0 sends at once.
  double reply_delay_ms = 0;
};

struct TestServerStats {
  size_t connections = 0;
  size_t max_held = 0;  // most FPReadExt/FPWriteExt received before answering
  // With reply_delay_ms: most FPReadExt/FPWriteExt received whose replies
  // had not left yet (the client's requests in flight).
  size_t max_in_flight = 0;
  size_t tickles_received = 0;
  size_t attention_acks = 0;
  std::vector<std::string> commands;  // "FPLogin", "DSITickle", ... in order
  std::vector<uint64_t> read_counts;  // FPReadExt request sizes
  std::vector<uint64_t> write_counts;
  std::string uam;  // the UAM of the last successful login
  std::string version;
  bool logged_out = false;
  bool closed_session = false;
};

class AfpTestServer {
 public:
  explicit AfpTestServer(TestServerConfig config);
  ~AfpTestServer();
  uint16_t port() const { return server_->port(); }
  TestServerStats stats() const;
  // The stats once `connections` connections have ended (the client's last
  // messages counted); throws std::runtime_error on timeout.
  TestServerStats stats_after(size_t connections) const;

 private:
  class Session;
  TestServerConfig config_;
  mutable std::mutex mu_;
  TestServerStats stats_;
  std::unique_ptr<LoopbackServer> server_;
};

}  // namespace cp::transfer::testing
