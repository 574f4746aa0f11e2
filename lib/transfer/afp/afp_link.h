// What an AFP session's files share with it (afp.cc), and the small-file
// operations it keeps in flight on its one DSI connection
// (afp_file_ops.cc). Internal to the afp driver.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "transfer/afp/afp.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/dsi.h"
#include "transfer/driver.h"

namespace cp::transfer::afp {

// FPGetFileDirParms' bitmaps: afpcmd's, so replayed captures see the same
// requests.
constexpr uint16_t kStatFileBitmap = kAttributes | kParentDirID | kCreateDate | kModDate |
                                     kFinderInfo | kNodeID | kExtDataForkLen |
                                     kUnixPrivs;  // 0x892f
constexpr uint16_t kStatDirBitmap = kAttributes | kParentDirID | kCreateDate | kModDate | kNodeID |
                                    kOffspringCount | kUnixPrivs;  // 0x830f

// A request in flight: its DSI id, and the bytes it covers.
struct Req {
  uint16_t id;
  uint64_t offset;
  uint64_t count;
};

// Files keep the link alive so a file closed after its session fails
// cleanly instead of dangling.
struct Link {
  std::unique_ptr<dsi::Connection> conn;
  Where where;  // object empty
  uint16_t volume = 0;
  unsigned depth = 8;
  uint64_t request_size = 0;
  // The last file's most requests in flight at once, and their bytes.
  std::string flight_op;
  size_t flight_requests = 0;
  uint64_t flight_bytes = 0;

  void note_flight(const char* op, const std::deque<Req>& q);

  Where at(const std::string& path) const {
    Where w = where;
    w.object = path;
    return w;
  }
  // The reply's payload; throws the mapped error for a failed result.
  std::string call(std::string_view afp, const std::string& path);
};

// Session::run_file_ops for the afp driver: each file's chain of AFP
// requests (create: FPCreateFile, FPOpenFork, FPWriteExt, FPFlushFork,
// FPCloseFork; stat: FPGetFileDirParms; read: FPOpenFork, FPReadExt,
// FPCloseFork; delete: FPDelete), up to ops.depth chains at once on the one
// DSI connection. `afp_path` maps the pass's relative path to the volume's.
void run_file_ops(Link& link, const std::function<std::string(const std::string&)>& afp_path,
                  FileOps& ops);

}  // namespace cp::transfer::afp
