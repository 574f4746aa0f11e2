#include "core/ini.h"

#include "core/text.h"

namespace cp {

std::vector<IniLine> read_ini(std::string_view text, const IniSyntax& syntax) {
  std::vector<IniLine> out;
  std::string section, pending;  // pending: a line continued with '\'
  int lineno = 0, pending_from = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++lineno;
    if (syntax.inline_comments) {
      if (const size_t c = raw.find_first_of(syntax.comment_chars); c != std::string_view::npos) {
        raw = raw.substr(0, c);
      }
    }
    std::string line(trim(raw));
    int from = lineno;
    if (!pending.empty()) {
      line = pending + line;
      from = pending_from;
      pending.clear();
    }
    if (syntax.continuation && !line.empty() && line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      pending_from = from;
      continue;
    }
    if (line.empty() || syntax.comment_chars.find(line.front()) != std::string_view::npos) {
      continue;
    }
    IniLine l;
    l.line = from;
    const size_t close = line.find(']');
    const size_t eq = line.find('=');
    if (line.front() == '[' && close != std::string::npos) {
      l.kind = IniLine::Kind::kSection;
      section = std::string(trim(std::string_view(line).substr(1, close - 1)));
    } else if (eq != std::string::npos && line.front() != '[') {
      l.kind = IniLine::Kind::kEntry;
      l.key = std::string(trim(std::string_view(line).substr(0, eq)));
      l.value = std::string(trim(std::string_view(line).substr(eq + 1)));
    }
    l.section = section;
    l.text = std::move(line);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace cp
