// Unit tests of the ftp driver's pure parts; drivers_lab_test.cc moves
// files through a real vsftpd.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

const Place kWhere{"198.18.0.1:21", "/ram", "cplab", "run-1/a.dat"};

std::string text(const Error& e) { return std::string(e.what()) + " | " + e.hint(); }

// Whether the error made of `f` at `step` (at kWhere) says `words`; on failure, what it says.
::testing::AssertionResult says(const FtpFailure& f, Step step, const std::string& words) {
  const Error e = ftp_error(f, step, kWhere);
  if (text(e).find(words) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text(e);
}

TEST(FtpError, ClosedPortNamesHostAndPort) {
  const Error e = ftp_error({CURLE_COULDNT_CONNECT, 0, "", "Failed to connect: refused"},
                            Step::kConnect, {"198.18.0.1:2121", "/ram", "cplab", ""});
  EXPECT_NE(text(e).find("cannot connect to the FTP server at 198.18.0.1:2121"), std::string::npos)
      << text(e);
  EXPECT_EQ(e.kind(), ErrorKind::kIo);
}

TEST(FtpError, WrongPasswordNamesTheUser) {
  const Error e =
      ftp_error({CURLE_LOGIN_DENIED, 530, "530 Login incorrect.", ""}, Step::kConnect, kWhere);
  EXPECT_NE(text(e).find("refused the login of user 'cplab'"), std::string::npos) << text(e);
  EXPECT_NE(text(e).find("530 Login incorrect."), std::string::npos) << text(e);
  EXPECT_NE(e.hint().find("password"), std::string::npos);
}

// Pure-FTPd, vsftpd and ProFTPD refusing a plain session, as each says it:
// a config error whose fix is an ftps:// URL, whatever curl made of it.
TEST(FtpError, ServerRequiringTlsAsksForFtpsUrl) {
  for (const FtpFailure& f :
       {FtpFailure{CURLE_OPERATION_TIMEDOUT, 421,
                   "421 Please reconnect using TLS security mechanisms.", ""},
        FtpFailure{CURLE_LOGIN_DENIED, 530, "530 Non-anonymous sessions must use encryption.", ""},
        FtpFailure{CURLE_LOGIN_DENIED, 550, "550 SSL/TLS required on the control channel", ""}}) {
    SCOPED_TRACE(f.reply);
    const Error e = ftp_error(f, Step::kConnect, kWhere);
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(e.hint().find("ftps://"), std::string::npos) << text(e);
  }
  // A plain refused login is not taken for it.
  const Error e =
      ftp_error({CURLE_LOGIN_DENIED, 530, "530 Login incorrect.", ""}, Step::kConnect, kWhere);
  EXPECT_EQ(e.hint().find("ftps://"), std::string::npos) << text(e);
}

TEST(FtpError, UnknownDirectoryAtConnect) {
  EXPECT_TRUE(says({CURLE_REMOTE_ACCESS_DENIED, 550, "550 Failed to change directory.", ""},
                   Step::kConnect, "has no directory /ram"));
}

TEST(FtpError, RefusedWriteAndMissingFile) {
  EXPECT_TRUE(says({CURLE_UPLOAD_FAILED, 553, "553 Could not create file.", ""}, Step::kOpenWrite,
                   "refused to store run-1/a.dat"));
  EXPECT_TRUE(says({CURLE_REMOTE_ACCESS_DENIED, 550, "550 Permission denied.", ""},
                   Step::kOpenWrite, "refused to store"));
  EXPECT_TRUE(says({CURLE_REMOTE_FILE_NOT_FOUND, 550, "550 Failed to open file.", ""},
                   Step::kOpenRead, "no file run-1/a.dat"));
}

TEST(FtpError, DiskFullFromAnyReply) {
  for (const FtpFailure& f :
       {FtpFailure{CURLE_UPLOAD_FAILED, 452, "452 Insufficient storage space.", ""},
        FtpFailure{CURLE_PARTIAL_FILE, 552, "552 Exceeded storage allocation", ""},
        FtpFailure{CURLE_PARTIAL_FILE, 451, "451 Failure writing to local file.", ""},
        FtpFailure{CURLE_UPLOAD_FAILED, 550, "550 No space left on device", ""}}) {
    EXPECT_TRUE(says(f, Step::kWrite, "its disk is full"));
  }
  EXPECT_TRUE(says({CURLE_SEND_ERROR, 150, "150 Ok to send data.", "Connection reset"},
                   Step::kWrite, "disk is probably full"));
  // 451 while reading is not a full disk.
  const Error e = ftp_error({CURLE_PARTIAL_FILE, 451, "451 Failure writing to local file.", ""},
                            Step::kRead, kWhere);
  EXPECT_EQ(text(e).find("disk is full"), std::string::npos) << text(e);
}

TEST(FtpError, TlsProblemsSayHowToFix) {
  EXPECT_TRUE(says({CURLE_USE_SSL_FAILED, 530, "530 Please login with USER and PASS.", ""},
                   Step::kConnect, "does not offer TLS"));
  const Error e = ftp_error({CURLE_PEER_FAILED_VERIFICATION, 0, "", "SSL certificate problem"},
                            Step::kConnect, kWhere);
  EXPECT_NE(e.hint().find("insecure=1"), std::string::npos) << text(e);
}

TEST(FtpDriver, RefusesOtherSchemesAndBadOptions) {
  auto d = make_driver("ftp");
  EXPECT_FALSE(driver_spec("ftp").caps.random_access);
  CancelToken cancel;
  Share s;
  s.url = "smb://h/x";
  EXPECT_THROW(d->connect(s, cancel), Error);
  s.url = "ftp://127.0.0.1:1/x";
  s.options["stall_timeout"] = "soon";
  EXPECT_THROW(d->connect(s, cancel), Error);
}

}  // namespace
}  // namespace cp::transfer
