// Test-only: the AFP captures in ../shared/vectors/afp as DSI messages,
// requests paired with their replies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transfer/afp/dsi.h"

namespace cp::transfer::testing {

// The vectors directory (compile definition AFP_VECTORS_DIR). Throws
// std::runtime_error when it is missing: tests must not silently pass.
std::string afp_vectors_dir();

struct Exchange {
  dsi::Message request;               // client -> server
  std::optional<dsi::Message> reply;  // the server's reply with the same id, if any
  // The AFP command of a DSICommand/DSIWrite, else 0.
  uint8_t afp_command() const;
};

struct CapturedConnection {
  std::vector<dsi::Message> from_client;  // in order
  std::vector<dsi::Message> from_server;
  std::vector<Exchange> exchanges;            // client requests in order, with replies
  std::vector<dsi::Message> server_requests;  // tickles, attentions, close from the server
};

// Every TCP connection of `file` (a name in the vectors directory), decoded.
std::vector<CapturedConnection> load_afp_capture(const std::string& file);

// The five captures' file names.
const std::vector<std::string>& afp_capture_names();

std::string hex(std::string_view bytes);

}  // namespace cp::transfer::testing
