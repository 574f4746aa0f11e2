#include "transfer/share_url.h"

#include <fmt/format.h>

#include <cctype>

#include "core/error.h"

namespace cp::transfer {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void bad_url(std::string_view url, std::string_view why) {
  throw Error(ErrorKind::kConfig, fmt::format("share URL '{}' {}", redact_url(url), why),
              "write it as scheme://[user@]host[:port]/path, like smb://nas/share or "
              "ftp://nas/pub (a path driver share is an absolute path like /mnt/nas)");
}

std::string decode(std::string_view url, std::string_view part) {
  std::string out;
  out.reserve(part.size());
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') {
      out += part[i];
      continue;
    }
    if (i + 2 >= part.size()) bad_url(url, "has a cut-off %-escape");
    const int hi = hex_value(part[i + 1]);
    const int lo = hex_value(part[i + 2]);
    if (hi < 0 || lo < 0) bad_url(url, "has a malformed %-escape");
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') bad_url(url, "has an encoded NUL (%00)");
    out += c;
    i += 2;
  }
  return out;
}

}  // namespace

std::string redact_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const size_t auth_start = scheme_end + 3;
  const size_t auth_end = url.find_first_of("/?#", auth_start);
  const std::string_view auth = url.substr(auth_start, auth_end - auth_start);
  const size_t at = auth.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const size_t colon = auth.find(':');
  if (colon == std::string_view::npos || colon > at) return std::string(url);
  std::string out(url.substr(0, auth_start + colon + 1));
  out += "***";
  out += url.substr(auth_start + at);
  return out;
}

ShareUrl parse_share_url(std::string_view url) {
  ShareUrl u;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) bad_url(url, "has no scheme://");
  for (char c : url.substr(0, scheme_end)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      bad_url(url, "has a malformed scheme");
    }
    u.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string_view rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    bad_url(url, "has a query or fragment (? or #), which shares do not take");
  }
  const size_t slash = rest.find('/');
  std::string_view auth = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (const size_t at = auth.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = auth.substr(0, at);
    auth = auth.substr(at + 1);
    const size_t colon = userinfo.find(':');
    u.user = decode(url, userinfo.substr(0, colon));
    if (colon != std::string_view::npos) u.password = decode(url, userinfo.substr(colon + 1));
  }
  std::string_view host = auth;
  std::string_view port;
  if (!auth.empty() && auth.front() == '[') {
    const size_t close = auth.find(']');
    if (close == std::string_view::npos) bad_url(url, "has an unclosed [IPv6] host");
    host = auth.substr(1, close - 1);
    const std::string_view after = auth.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') bad_url(url, "has text after its [IPv6] host");
      port = after.substr(1);
      if (port.empty()) bad_url(url, "has an empty port");
    }
  } else if (const size_t colon = auth.rfind(':'); colon != std::string_view::npos) {
    host = auth.substr(0, colon);
    port = auth.substr(colon + 1);
    if (port.empty()) bad_url(url, "has an empty port");
  }
  if (host.empty() && u.scheme != "file") bad_url(url, "has no host");
  u.host = decode(url, host);
  if (!port.empty()) {
    int p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535) bad_url(url, "has a port that is not a number 1-65535");
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) bad_url(url, "has a port that is not a number 1-65535");
    u.port = p;
  }
  u.path = decode(url, path);
  while (u.path.size() > 1 && u.path.back() == '/') u.path.pop_back();
  return u;
}

std::string percent_encode_path(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

void check_relative_path(std::string_view rel) {
  auto bad = [&](std::string_view why) {
    throw Error(ErrorKind::kConfig, fmt::format("file path '{}' inside a share {}", rel, why),
                "name files relative to the share's root, like run-1/a.dat");
  };
  if (rel.empty()) bad("is empty");
  if (rel.front() == '/') bad("is absolute");
  if (rel.find('\0') != std::string_view::npos) bad("holds a NUL byte");
  size_t start = 0;
  while (start <= rel.size()) {
    const size_t end = std::min(rel.find('/', start), rel.size());
    const std::string_view part = rel.substr(start, end - start);
    if (part.empty()) bad("has an empty component (//, or a trailing /)");
    if (part == "." || part == "..") bad("has a . or .. component");
    start = end + 1;
  }
}

std::string host_port(const ShareUrl& url, int default_port) {
  const int port = url.port ? url.port : default_port;
  if (url.host.find(':') != std::string::npos) return fmt::format("[{}]:{}", url.host, port);
  return fmt::format("{}:{}", url.host, port);
}

}  // namespace cp::transfer
