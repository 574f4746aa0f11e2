// What the commands print to a terminal and the host names they take:
// remote strings escaped on the way out (core/text.h sanitize_text), a host
// argument checked on the way in.
#pragma once

#include <iosfwd>
#include <sstream>
#include <string>

namespace cp::app {

// While alive, std::cout collects text; on the way out it is written through
// sanitize_text, so what a peer said (paths, reasons, errors) is escaped.
class EscapedStdout {
 public:
  EscapedStdout();
  ~EscapedStdout();
  EscapedStdout(const EscapedStdout&) = delete;
  EscapedStdout& operator=(const EscapedStdout&) = delete;

 private:
  std::ostringstream text_;
  std::streambuf* real_;
};

// The value of --server or --client (`option`: "server", "client"): an SSH
// host or alias, or 'local'. Throws Error(kConfig) with key "--server" (or
// "--client") when it is empty, blank or holds a control character (it is
// printed and stored as given).
std::string checked_host(const std::string& option, const std::string& value);

}  // namespace cp::app
