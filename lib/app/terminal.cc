#include "app/terminal.h"

#include <fmt/format.h>

#include <iostream>

#include "core/error.h"
#include "core/text.h"

namespace cp::app {

EscapedStdout::EscapedStdout() : real_(std::cout.rdbuf(text_.rdbuf())) {}

EscapedStdout::~EscapedStdout() {
  std::cout.rdbuf(real_);
  std::cout << sanitize_text(text_.str());
}

std::string checked_host(const std::string& option, const std::string& value) {
  const std::string safe = sanitize_field(value);
  const char* why = trim(value).empty() ? "is empty"
                    : safe != value     ? "holds a control character"
                                        : nullptr;
  if (why) {
    throw Error(ErrorKind::kConfig, fmt::format("--{} '{}' {}", option, safe, why),
                fmt::format("name the {} by its SSH host or alias (as in ~/.ssh/config), or "
                            "'local' for this machine",
                            option == "server" ? "file server" : "client"),
                "--" + option);
  }
  return value;
}

}  // namespace cp::app
