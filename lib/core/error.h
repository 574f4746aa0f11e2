// One error policy: a bug aborts (CP_CHECK); bad input from a user or a peer
// is a typed cp::Error, recoverable, caught at the edge (main, a stage, the
// agent's request loop) and reported with a hint that says how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace cp {

enum class ErrorKind {
  kUsage,        // bad command line
  kConfig,       // bad plan file or option value
  kPeer,         // malformed message from an agent or the orchestrator
  kRemote,       // SSH, host keys, deployment
  kIo,           // a file, a socket, the database
  kUnsupported,  // the host or kernel lacks what was asked for
  kCancelled,    // the run was interrupted
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string hint = {}, std::string key = {})
      : std::runtime_error(std::move(message)),
        kind_(kind),
        hint_(std::move(hint)),
        key_(std::move(key)) {}
  ErrorKind kind() const { return kind_; }
  // How to fix it, or empty.
  const std::string& hint() const { return hint_; }
  // The setting at fault, for config and usage errors: a plan key
  // ("link.nominal", "share NAME.url") or an option ("--server"); or empty.
  const std::string& key() const { return key_; }

 private:
  ErrorKind kind_;
  std::string hint_;
  std::string key_;
};

// Message plus hint, for the terminal: "message (hint)".
std::string describe(const Error& e);

// errno as text, for messages: "No such file or directory".
std::string errno_text(int err);

[[noreturn]] void check_failed(const char* expr, const char* file, int line);

}  // namespace cp

// A broken invariant is a bug: print where and abort.
#define CP_CHECK(expr) ((expr) ? (void)0 : ::cp::check_failed(#expr, __FILE__, __LINE__))
