#include "transfer/share_url.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cp::transfer {
namespace {

TEST(ShareUrl, ParsesAllParts) {
  const ShareUrl u = parse_share_url("FTP://b%40b@198.18.0.1:2121/ram/sub/");
  EXPECT_EQ(u.scheme, "ftp");
  EXPECT_EQ(u.user, "b@b");
  EXPECT_EQ(u.host, "198.18.0.1");
  EXPECT_EQ(u.port, 2121);
  EXPECT_EQ(u.path, "/ram/sub");
}

TEST(ShareUrl, MinimalAndIpv6) {
  ShareUrl u = parse_share_url("smb://nas");
  EXPECT_EQ(u.host, "nas");
  EXPECT_EQ(u.port, 0);
  EXPECT_EQ(u.path, "");
  u = parse_share_url("smb://[fe80::1]:445/share");
  EXPECT_EQ(u.host, "fe80::1");
  EXPECT_EQ(u.port, 445);
  EXPECT_EQ(host_port(u, 1), "[fe80::1]:445");
  u = parse_share_url("ftp://h/%2Fsrv/ftp");
  EXPECT_EQ(u.path, "//srv/ftp");
  EXPECT_EQ(host_port(u, 21), "h:21");
  u = parse_share_url("file:///mnt/nas");
  EXPECT_EQ(u.host, "");
  EXPECT_EQ(u.path, "/mnt/nas");
}

TEST(ShareUrl, Ipv6LiteralsKeepTheirZoneAndPort) {
  ShareUrl u = parse_share_url("nfs://[2001:db8::7]/export");
  EXPECT_EQ(u.host, "2001:db8::7");
  EXPECT_EQ(u.port, 0);
  EXPECT_EQ(host_port(u, 2049), "[2001:db8::7]:2049");
  u = parse_share_url("smb://bob@[fe80::1%25eth0]:4450/s");
  EXPECT_EQ(u.host, "fe80::1%eth0");
  EXPECT_EQ(u.user, "bob");
  EXPECT_EQ(u.port, 4450);
  EXPECT_EQ(u.path, "/s");
}

TEST(ShareUrl, PercentEscapesAreDecodedInEveryPart) {
  const ShareUrl u = parse_share_url("smb://DOM%3Bb%20b@h%2Dx/My%20Share/%C3%A9t%C3%A9");
  EXPECT_EQ(u.user, "DOM;b b");
  EXPECT_EQ(u.host, "h-x");
  EXPECT_EQ(u.path, "/My Share/\xC3\xA9t\xC3\xA9");
  // A user's ';' needs no escape (smb's DOMAIN;user, afp's ;AUTH=).
  EXPECT_EQ(parse_share_url("afp://u;AUTH=DHX2@h/v").user, "u;AUTH=DHX2");
}

TEST(ShareUrl, PortsFromOneTo65535) {
  EXPECT_EQ(parse_share_url("ftp://h:1/x").port, 1);
  EXPECT_EQ(parse_share_url("ftp://h:65535").port, 65535);
  for (const char* bad : {"ftp://h:0/x", "ftp://h:65536/x", "ftp://h:-1/x", "ftp://h: 21/x"}) {
    EXPECT_THROW(parse_share_url(bad), Error) << bad;
  }
}

TEST(ShareUrl, RejectsMalformed) {
  for (const char* bad :
       {"nas/share", "://x", "smb:///share", "ftp://h:/x", "ftp://h:99999/x", "ftp://h:12a/x",
        "ftp://h/a%2", "ftp://h/a%zz", "ftp://h/a%00", "smb://h/s?x=1", "ftp://[::1/x",
        "s mb://h/x", "ftp://h/x#frag", "smb://h/a b", "ftp://%00@h/x"}) {
    EXPECT_THROW(parse_share_url(bad), Error) << bad;
  }
}

// A password in a URL would be kept wherever the URL goes (plan, database,
// reports): refused for every scheme, the fix naming the share's password keys.
TEST(SecuritySecrets, UrlWithAPasswordIsRefused) {
  for (const char* url : {"ftp://bob:S3cret@nas/pub", "ftps://bob:S3cret@nas:990/pub",
                          "smb://DOM;bob:S3cret@nas/share", "afp://bob:S3cret@nas/Data",
                          "nfs://bob:S3cret@nas/export", "ftp://bob:S3cret%2F@nas/pub",
                          "file://bob:S3cret@/mnt/nas"}) {
    for (auto check : {&parse_share_url, +[](std::string_view u) {
                         check_share_url(u);
                         return ShareUrl{};
                       }}) {
      try {
        check(url);
        ADD_FAILURE() << url << " was taken";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kConfig) << url;
        EXPECT_EQ(std::string(e.what()).find("S3cret"), std::string::npos) << e.what();
        EXPECT_EQ(e.hint().find("S3cret"), std::string::npos) << e.hint();
        for (const char* key : {"password_env", "password_file", "password_prompt"}) {
          EXPECT_NE(e.hint().find(key), std::string::npos) << key << " in " << e.hint();
        }
      }
    }
  }
  // A user alone, or an empty password, is no secret.
  EXPECT_EQ(parse_share_url("ftp://bob@nas/pub").user, "bob");
  EXPECT_EQ(parse_share_url("ftp://bob:@nas/pub").user, "bob");
}

// What the plan checks when it reads a share's URL: the URL's syntax for a
// scheme://, nothing for a path or null:.
TEST(ShareUrl, CheckShareUrlChecksUrlsOnly) {
  EXPECT_NO_THROW(check_share_url("/mnt/nas"));
  EXPECT_NO_THROW(check_share_url("null:"));
  EXPECT_NO_THROW(check_share_url("smb://nas/share"));
  for (const char* bad : {"smb://h/s%zz", "ftp://h:99999/s", "smb://h/s%2", "ftp://:21/x"}) {
    try {
      check_share_url(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig) << bad;
      EXPECT_FALSE(e.hint().empty()) << bad;
    }
  }
}

TEST(ShareUrl, ErrorsNeverShowThePassword) {
  try {
    parse_share_url("ftp://bob:hunter2@h:0/x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bob:***@h"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
  EXPECT_EQ(redact_url("smb://u:p@h/s"), "smb://u:***@h/s");
  EXPECT_EQ(redact_url("smb://u@h/s"), "smb://u@h/s");
  EXPECT_EQ(redact_url("/mnt/x"), "/mnt/x");
  // A '/' inside a password ends curl's authority early: masked to the '@' all the same.
  EXPECT_EQ(redact_url("ftp://bob:se/cret@h/x"), "ftp://bob:***@h/x");
  EXPECT_EQ(redact_url("smb://h/dir@x"), "smb://h/dir@x");
}

TEST(ShareUrl, EncodesPaths) {
  EXPECT_EQ(percent_encode_path("run-1/a b%.dat"), "run-1/a%20b%25.dat");
  EXPECT_EQ(percent_encode_path("x~_y"), "x~_y");
}

TEST(ShareUrl, ChecksRelativePaths) {
  EXPECT_NO_THROW(check_relative_path("run-1/a.dat"));
  EXPECT_NO_THROW(check_relative_path("a"));
  for (const char* bad : {"", "/etc/passwd", "a//b", "a/", "../x", "a/./b", "a/.."}) {
    EXPECT_THROW(check_relative_path(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace cp::transfer
