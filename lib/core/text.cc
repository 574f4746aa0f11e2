#include "core/text.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include "core/json_util.h"
#include "core/model.h"

namespace cp {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// The length of the valid UTF-8 sequence at s[i] (2-4), or 0 when it is not
// one (overlong forms and surrogates are not).
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  }
  return n;
}

// The code point of a valid sequence of `n` bytes at s[i].
uint32_t code_point(std::string_view s, size_t i, size_t n) {
  uint32_t cp = static_cast<unsigned char>(s[i]) & (0xff >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return cp;
}

// C1 controls (a terminal may read U+009B as CSI) and the bidi overrides
// and isolates that reorder what is shown.
bool escaped_code_point(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string sanitize(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\n' && keep_newlines) {
      out += '\n';
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x80) {  // the other C0 controls and DEL
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (const size_t n = utf8_length(s, i); n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      const uint32_t cp = code_point(s, i, n);
      if (escaped_code_point(cp)) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
        out += buf;
      } else {
        out.append(s.substr(i, n));
      }
      i += n;
      continue;
    }
    ++i;
  }
  return out;
}

void sanitize_json_text(std::string& text) {
  if (text.empty()) return;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) return;
  if (sanitize_json(v)) text = boost::json::serialize(v);
}

void sanitize_in_place(std::string& s) { s = sanitize_field(s); }

}  // namespace

std::string sanitize_field(std::string_view s) { return sanitize(s, false); }

bool sanitize_json(boost::json::value& v) {
  bool changed = false;
  if (v.is_string()) {
    std::string safe = sanitize_field(v.as_string());
    if (safe != v.as_string()) {
      v = safe;
      changed = true;
    }
  } else if (v.is_array()) {
    for (auto& e : v.as_array()) changed |= sanitize_json(e);
  } else if (v.is_object()) {
    boost::json::object out;
    for (auto& [k, sub] : v.as_object()) {
      changed |= sanitize_json(sub);
      std::string key = sanitize_field(k);
      changed |= key != k;
      out[key] = std::move(sub);
    }
    if (changed) v = std::move(out);
  }
  return changed;
}

std::string sanitize_text(std::string_view s) { return sanitize(s, true); }

RunRecord sanitized_run(const RunRecord& run) {
  RunRecord r = run;
  for (std::string* s : {&r.label, &r.status, &r.error, &r.server, &r.client, &r.version}) {
    sanitize_in_place(*s);
  }
  sanitize_json_text(r.plan_json);
  for (HostRecord& h : r.hosts) {
    sanitize_in_place(h.role);
    sanitize_in_place(h.address);
    sanitize_json_text(h.facts_json);
  }
  for (StageRecord& st : r.stages) {
    for (std::string* s : {&st.layer, &st.where, &st.status, &st.error}) sanitize_in_place(*s);
    sanitize_json_text(st.params_json);
    for (SampleRecord& sa : st.samples) {
      sanitize_in_place(sa.op);
      sanitize_in_place(sa.error);
      sanitize_json_text(sa.details_json);
      sanitize_json_text(sa.cpu_json);
    }
  }
  return r;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string squeeze_ws(std::string_view s) {
  std::string out;
  for (std::string_view w : split_ws(s)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::optional<bool> parse_yes_no(std::string_view s) {
  if (s == "yes" || s == "true" || s == "on" || s == "1") return true;
  if (s == "no" || s == "false" || s == "off" || s == "0") return false;
  return std::nullopt;
}

namespace {
// `s` through std::stoi-like `parse`, when it takes all of it.
template <class Parse>
auto whole_number(const std::string& s, Parse parse) -> std::optional<decltype(parse(s, nullptr))> {
  size_t used = 0;
  try {
    const auto v = parse(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {  // std::invalid_argument, std::out_of_range
  }
  return std::nullopt;
}
}  // namespace

std::optional<int> parse_int(const std::string& s) {
  return whole_number(s, [](const std::string& t, size_t* used) { return std::stoi(t, used); });
}

std::optional<double> parse_double(const std::string& s) {
  return whole_number(s, [](const std::string& t, size_t* used) { return std::stod(t, used); });
}

std::optional<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (n < 0) return std::nullopt;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

bool read_file(const std::string& path, std::string* out) {
  std::optional<std::string> text = read_file(path);
  *out = text ? std::move(*text) : std::string();
  return text.has_value();
}

}  // namespace cp
