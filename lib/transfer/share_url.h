// Share URLs and file paths inside a share, shared by the ftp, smb, afp, nfs
// and path drivers, and check_share_url for the plan (lib/pipeline).
#pragma once

#include <string>
#include <string_view>

namespace cp::transfer {

// "scheme://[user@]host[:port][/path]", percent-decoded; parsed by libcurl's
// CURLU (RFC 3986), with the checks it leaves to its caller.
struct ShareUrl {
  std::string scheme;    // lower case: "ftp", "ftps", "smb", "file"
  std::string user;      // empty when the URL names none
  std::string password;  // always empty: a URL with a password is refused (Share::password)
  std::string host;      // "198.18.0.1"; an IPv6 literal without its brackets
  int port = 0;          // 0: the scheme's default
  std::string path;      // "/ram", "" when absent; never ends in '/' (except "/")
};

// Throws Error(kConfig) naming the URL (password masked) for a malformed one:
// no "scheme://", an empty host, a bad port, bad %-escapes; and for one that
// carries a password ("ftp://bob:S3cret@nas/x"), the hint naming the share
// keys that give one (password_env, password_file, password_prompt).
ShareUrl parse_share_url(std::string_view url);

// What the plan checks of a share's URL when it is read, before anything
// connects: parse_share_url's checks for a "scheme://" URL; nothing for a
// path (/mnt/nas) or "null:". Throws Error(kConfig).
void check_share_url(std::string_view url);

// The URL with any password replaced by "***", for messages and logs.
std::string redact_url(std::string_view url);

// %-encodes everything but unreserved characters and '/', for URLs.
std::string percent_encode_path(std::string_view path);

// Checks a path relative to a share's root ("run-1/a.dat"): not empty, not
// absolute, no "." or ".." or empty components, no NUL. Throws Error(kConfig).
void check_relative_path(std::string_view rel);

// "host:port" for messages; IPv6 hosts in brackets.
std::string host_port(const ShareUrl& url, int default_port);

}  // namespace cp::transfer
