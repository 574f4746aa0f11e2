// One INI reader for the plan file and Samba's smb.conf: lines of
// "[section]" and "key = value", with comments. It only splits; what a
// section or key means, and whether an odd line is an error (the plan) or
// skipped (smb.conf, read as facts), is the caller's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cp {

struct IniSyntax {
  // Characters that start a comment when first on a line ("#;" for smb.conf).
  std::string_view comment_chars = "#";
  // A comment character anywhere ends the line (the plan: "count = 3  # few").
  bool inline_comments = false;
  // A line ending in '\' goes on with the next one (smb.conf).
  bool continuation = false;
};

struct IniLine {
  enum class Kind {
    kSection,  // "[name]...": `section` is the name between '[' and the first ']'
    kEntry,    // "key = value": `key`, `value`, and the `section` it is in
    kOther,    // neither (no '=', or a '[' with no ']'): the caller decides
  };
  Kind kind = Kind::kOther;
  int line = 0;         // 1-based number of the line it starts on
  std::string text;     // the line, comment removed, trimmed, continuations joined
  std::string section;  // trimmed; "" before the first section
  std::string key;      // trimmed
  std::string value;    // trimmed
};

// The text's non-empty, non-comment lines in order.
std::vector<IniLine> read_ini(std::string_view text, const IniSyntax& syntax = {});

}  // namespace cp
