#include "transfer/share_url.h"

#include <fmt/format.h>

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "core/error.h"

namespace cp::transfer {
namespace {

[[noreturn]] void bad_url(std::string_view url, std::string_view why) {
  throw Error(ErrorKind::kConfig, fmt::format("share URL '{}' {}", redact_url(url), why),
              "write it as scheme://[user@]host[:port]/path, like smb://nas/share or "
              "ftp://nas/pub (a path driver share is an absolute path like /mnt/nas)");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// libcurl's URL handle, freed on every path out.
struct Url {
  CURLU* h = curl_url();
  ~Url() { curl_url_cleanup(h); }
  // A part, %-decoded; nullopt when the URL has none.
  std::optional<std::string> get(std::string_view url, CURLUPart part, unsigned flags) const {
    char* v = nullptr;
    const CURLUcode rc = curl_url_get(h, part, &v, flags);
    if (rc == CURLUE_URLDECODE) bad_url(url, "has an encoded NUL (%00)");
    if (rc != CURLUE_OK) return std::nullopt;
    std::string out(v);
    curl_free(v);
    return out;
  }
};

// Whether the authority ("user:password@host") holds a non-empty password.
bool has_password(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return false;
  const std::string_view rest = url.substr(scheme_end + 3);
  const std::string_view auth = rest.substr(0, rest.find_first_of("/?#"));
  const size_t at = auth.rfind('@');
  if (at == std::string_view::npos) return false;
  const size_t colon = auth.find(':');
  return colon != std::string_view::npos && colon + 1 < at;
}

// A password in the URL would be kept wherever the URL is: the plan, the
// database, every report and message. It is refused, whatever the scheme.
[[noreturn]] void refuse_password(std::string_view url) {
  throw Error(ErrorKind::kConfig, fmt::format("share URL '{}' carries a password", redact_url(url)),
              "remove it from the URL and name where the share's password comes from: "
              "password_env = VAR (an environment variable), password_file = FILE (yours, "
              "chmod 600) or password_prompt = yes; on the command line "
              "--share NAME=URL,password_env=VAR");
}

}  // namespace

// The password runs from the first ':' after "://" to the last '@' of the
// authority; in a malformed URL (a '/' inside the password) to the last '@'
// at all, so an error message about it never shows the rest.
std::string redact_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const size_t auth_start = scheme_end + 3;
  const size_t auth_end = std::min(url.find_first_of("/?#", auth_start), url.size());
  size_t at = url.substr(0, auth_end).rfind('@');
  if (at == std::string_view::npos || at < auth_start) at = url.rfind('@');
  if (at == std::string_view::npos || at < auth_start) return std::string(url);
  const size_t colon = url.find(':', auth_start);
  if (colon == std::string_view::npos || colon > at) return std::string(url);
  std::string out(url.substr(0, colon + 1));
  out += "***";
  out += url.substr(at);
  return out;
}

// libcurl's CURLU parses (RFC 3986, schemes it does not speak too); what it
// lets through that a share cannot be is refused here: malformed %-escapes
// (curl keeps them literally), an empty port or host, port 0, a query or a
// fragment.
ShareUrl parse_share_url(std::string_view url) {
  if (has_password(url)) refuse_password(url);  // before curl, whose errors say less
  const std::string text(url);
  Url u;
  const CURLUcode rc =
      curl_url_set(u.h, CURLUPART_URL, text.c_str(), CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS);
  if (rc == CURLUE_BAD_SCHEME || rc == CURLUE_MALFORMED_INPUT) bad_url(url, "has no scheme://");
  if (rc == CURLUE_BAD_PORT_NUMBER) bad_url(url, "has a port that is not a number 1-65535");
  if (rc != CURLUE_OK) bad_url(url, fmt::format("is malformed ({})", curl_url_strerror(rc)));
  for (size_t i = url.find('%'); i != std::string_view::npos; i = url.find('%', i + 1)) {
    if (i + 2 >= url.size()) bad_url(url, "has a cut-off %-escape");
    if (hex_value(url[i + 1]) < 0 || hex_value(url[i + 2]) < 0) {
      bad_url(url, "has a malformed %-escape");
    }
  }
  ShareUrl s;
  s.scheme = u.get(url, CURLUPART_SCHEME, 0).value_or("");
  // curl reads "smb:///x" as host x, and "h:/" as no port.
  const std::string_view rest = url.substr(url.find("://") + 3);
  const std::string_view auth = rest.substr(0, rest.find_first_of("/?#"));
  if (auth.empty() && s.scheme != "file") bad_url(url, "has no host");
  if (!auth.empty() && auth.back() == ':') bad_url(url, "has an empty port");
  if (u.get(url, CURLUPART_QUERY, 0) || u.get(url, CURLUPART_FRAGMENT, 0) ||
      url.find('#') != std::string_view::npos) {
    bad_url(url, "has a query or fragment (? or #), which shares do not take");
  }
  s.user = u.get(url, CURLUPART_USER, CURLU_URLDECODE).value_or("");
  if (!u.get(url, CURLUPART_PASSWORD, 0).value_or("").empty()) refuse_password(url);
  s.host = u.get(url, CURLUPART_HOST, CURLU_URLDECODE).value_or("");
  if (s.host.size() >= 2 && s.host.front() == '[' && s.host.back() == ']') {
    s.host = s.host.substr(1, s.host.size() - 2);  // an IPv6 literal
    if (auto zone = u.get(url, CURLUPART_ZONEID, CURLU_URLDECODE)) s.host += "%" + *zone;
  }
  if (auto port = u.get(url, CURLUPART_PORT, 0)) {
    s.port = std::atoi(port->c_str());
    if (s.port < 1 || s.port > 65535) bad_url(url, "has a port that is not a number 1-65535");
  }
  // No path at all reads as "" (curl says "/").
  if (rest.find('/') != std::string_view::npos) {
    s.path = u.get(url, CURLUPART_PATH, CURLU_URLDECODE).value_or("");
  }
  while (s.path.size() > 1 && s.path.back() == '/') s.path.pop_back();
  return s;
}

void check_share_url(std::string_view url) {
  if (url.find("://") != std::string_view::npos) parse_share_url(url);
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
