// Test-only: an AFP server that replays captured sessions on 127.0.0.1.
// For each message a client sends it looks for a captured client message
// with the same bytes (the request id aside) and answers with the reply the
// real server gave to it, under the client's request id; the n-th identical
// request gets the n-th captured reply (the last one again after that).
// A request the captures lack is answered only when its AFP command is in
// `synthesize` (an empty success: netatalk's reply to the commands it is
// used for), else the peer logs it as unmatched and drops the connection.
// DSICloseSession ends the connection; client tickles are counted.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "transfer/afp/testing/afp_capture.h"
#include "transfer/testing/loopback.h"

namespace cp::transfer::testing {

class ReplayPeer {
 public:
  explicit ReplayPeer(const std::vector<CapturedConnection>& captures,
                      std::set<uint8_t> synthesize = {});
  uint16_t port() const { return server_->port(); }

  struct Report {
    size_t matched = 0;                    // answered from the captures
    std::vector<std::string> synthesized;  // "FPFlushFork", ...
    std::vector<std::string> unmatched;    // hex of client messages nobody captured
    std::vector<std::string> log;          // one line per client message
    size_t connections = 0;
    size_t tickles = 0;
  };
  Report report() const;
  // The report once `connections` connections have ended (tests: after the
  // client closed, so the record is complete); fails the test on timeout.
  Report report_after(size_t connections) const;

 private:
  void serve(int fd, const std::atomic<bool>& stop);

  struct Entry {
    std::vector<dsi::Message> replies;  // captured replies, in order
    size_t used = 0;
  };
  std::map<std::string, Entry> pool_;  // key: header without id + payload
  std::set<uint8_t> synthesize_;
  mutable std::mutex mu_;
  Report report_;
  std::unique_ptr<LoopbackServer> server_;
};

}  // namespace cp::transfer::testing
