// File-transfer drivers: one per protocol (ftp, smb, afp, path, null), each
// behind this small interface and registered in one explicit list
// (registry.cc), the way fio's ioengines are. The agent on the client opens
// a session to a share, then streams files through it with bounded buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"

namespace cp::transfer {

// A share as the plan declares it. The password never comes from argv, the
// database or logs: the orchestrator resolves it (env var, 0600 file, prompt)
// and passes it to the agent over the channel only.
struct Share {
  std::string name;      // the plan's name for it ("smb-ram")
  std::string url;       // "ftp://host/dir", "smb://host/share", "afp://host/vol", "/mnt/x"
  std::string user;      // empty: from the URL, else anonymous/guest
  std::string password;  // secret
  std::map<std::string, std::string> options;  // driver options ("depth" = "8", ...)
};

struct Capabilities {
  bool read = true;
  bool write = true;
  bool remove = true;
  bool random_access = false;  // pread at offsets (the transfer-size sweep's random reads)
  bool random_write = false;   // pwrite at offsets (its random writes)
};

enum class Mode { kRead, kWrite };

// One open remote file. Sequential unless the driver has random_access.
class File {
 public:
  virtual ~File() = default;
  // Reads up to n bytes; 0 at end of file. Throws cp::Error on failure.
  virtual size_t read(char* buf, size_t n) = 0;
  // Reads at an offset (random_access drivers only).
  virtual size_t pread(char* buf, size_t n, uint64_t offset);
  // Writes at an offset (random_write drivers only).
  virtual void pwrite(const char* buf, size_t n, uint64_t offset);
  // Writes all n bytes (may buffer up to the driver's bounded window).
  virtual void write(const char* buf, size_t n) = 0;
  // Flushes, waits for every outstanding request, closes; throws on failure.
  virtual void close() = 0;
};

// A logged-in connection to a share.
class Session {
 public:
  virtual ~Session() = default;
  // `path` is relative to the share's root ("run-1/a.dat").
  virtual std::unique_ptr<File> open(const std::string& path, Mode mode, uint64_t size_hint) = 0;
  virtual void remove(const std::string& path) = 0;
  // What was negotiated, stored with each sample because it changes the
  // throughput (SMB dialect, signing, encryption; AFP version and UAM; ...).
  virtual std::map<std::string, std::string> properties() const { return {}; }
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string name() const = 0;
  virtual Capabilities capabilities() const = 0;
  // Connects and logs in. Errors say what failed and how to fix it (bad
  // login, unknown share, closed port, ...). `cancel` must outlive the
  // session: drivers may keep it to abandon waits (the agent passes its own).
  virtual std::unique_ptr<Session> connect(const Share& share, const CancelToken& cancel) = 0;
};

// Every driver this build has, in one explicit list.
const std::vector<std::string>& driver_names();
// The driver for a name; throws Error(kConfig) naming the known ones.
std::unique_ptr<Driver> make_driver(const std::string& name);

}  // namespace cp::transfer
