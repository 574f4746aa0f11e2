// The afp transfer driver: AFP 3.x over DSI/TCP, spoken by chokepoint
// itself (no AFP client library exists for Linux). make_afp_driver() is
// declared in registry.h; this header holds its pure parts for tests.
// Internal to lib/transfer.
//
// Share URL: afp://[user[;AUTH=uam]@]host[:port]/volume[/dir]
//   - user: the login; Share::user overrides it; none: a guest login.
//   - uam: "No User Authent", "Cleartxt Passwrd", "DHCAST128", "DHX2"
//     (%-escaped), or guest/clrtxt/dhx/dhx2; none: the strongest offered.
//   - the password comes from Share::password only, never from the URL.
// Share options:
//   depth          FPReadExt/FPWriteExt requests in flight (1-64, default 8)
//   request_size   bytes per request (default and cap: the server's DSI
//                  request quantum, at most 16 MiB)
//   timeout        longest silence from the server while a reply is due (120s)
//   connect_timeout  (10s)
//   tickle_interval  send a DSITickle after this long without sending (30s;
//                    netatalk drops a client silent for 2 minutes)
//   uam            auto (the strongest offered, never Cleartxt Passwrd),
//                  dhx2, dhcast128, cleartxt or guest; as ;AUTH= in the URL
// Files opened for writing replace an existing file (delete, then create).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"

namespace cp::transfer::afp {

struct AfpUrl {
  std::string user;  // empty: none in the URL
  std::string uam;   // canonical UAM name; empty: choose the strongest offered
  std::string host;
  uint16_t port = 548;
  std::string volume;
  std::string dir;  // "a/b" inside the volume; empty: its root
};
// Throws Error(kConfig) naming the URL and the problem.
AfpUrl parse_afp_url(std::string_view url);

struct AfpOptions {
  unsigned depth = 8;
  uint64_t request_size = 0;  // 0: the negotiated quantum
  double timeout_s = 120;
  double connect_timeout_s = 10;
  double tickle_s = 30;
  // Option uam: the canonical UAM to log in with; empty ("auto", the
  // default): the strongest offered, never Cleartxt Passwrd (choose_uam).
  std::string uam;
};
// Throws Error(kConfig) for an unknown option or a bad value.
AfpOptions parse_afp_options(const std::map<std::string, std::string>& options);

// Where a failure happened, for messages.
struct Where {
  std::string server;  // "host:port"
  std::string volume;
  std::string user;    // empty: guest
  std::string object;  // file path inside the share, or empty
};
// "afp://server/volume[/object]", for messages.
std::string where_text(const Where& w);
// The cp::Error for AFP result `code` answering `command` (afp_codec.h
// Command): a clear message (bad login, no such volume, access denied,
// disk full, object not found, ...) with the result's name, and a hint.
Error afp_error(int32_t code, uint8_t command, const Where& where);

}  // namespace cp::transfer::afp
