// Unit tests of the smb driver's error mapping (smb_error.cc).
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "core/error.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

const Place kWhere{"198.18.0.1:445", "ram", "cplab", "run-1/a.dat"};

std::string text(const Error& e) { return std::string(e.what()) + " | " + e.hint(); }

TEST(SmbError, FindsTheLastNtStatus) {
  EXPECT_EQ(smb_status_from_log("cli_connect: NT_STATUS_OK\ntree connect failed: "
                                "NT_STATUS_BAD_NETWORK_NAME\n"),
            "NT_STATUS_BAD_NETWORK_NAME");
  EXPECT_EQ(smb_status_from_log("SPNEGO login failed: The attempted logon is invalid."),
            "NT_STATUS_LOGON_FAILURE");
  EXPECT_EQ(smb_status_from_log("nothing here"), "");
}

TEST(SmbError, ConnectFailures) {
  Error e = smb_error(ECONNREFUSED, "", Step::kConnect, {"198.18.0.1:4455", "ram", "cplab", ""});
  EXPECT_NE(text(e).find("cannot connect to the SMB server at 198.18.0.1:4455"), std::string::npos)
      << text(e);
  e = smb_error(EACCES, "NT_STATUS_LOGON_FAILURE", Step::kConnect, kWhere);
  EXPECT_NE(text(e).find("refused the login of user 'cplab'"), std::string::npos) << text(e);
  e = smb_error(ENOENT, "NT_STATUS_BAD_NETWORK_NAME", Step::kConnect, kWhere);
  EXPECT_NE(text(e).find("has no share"), std::string::npos) << text(e);
  EXPECT_EQ(e.kind(), ErrorKind::kConfig);
}

TEST(SmbError, WriteFailures) {
  Error e = smb_error(EACCES, "NT_STATUS_ACCESS_DENIED", Step::kOpenWrite, kWhere);
  EXPECT_NE(text(e).find("refused to write ram/run-1/a.dat"), std::string::npos) << text(e);
  e = smb_error(ENOSPC, "", Step::kWrite, kWhere);
  EXPECT_NE(text(e).find("its disk is full"), std::string::npos) << text(e);
  e = smb_error(EIO, "NT_STATUS_DISK_FULL", Step::kClose, kWhere);
  EXPECT_NE(text(e).find("its disk is full"), std::string::npos) << text(e);
  e = smb_error(ENOENT, "", Step::kOpenRead, kWhere);
  EXPECT_NE(text(e).find("no file ram/run-1/a.dat"), std::string::npos) << text(e);
}

TEST(SmbError, NamesTheOperationThatFailed) {
  const Place w{"198.18.0.1:445", "ram", "cplab", "read-1.dat"};
  // A failed close after reading is not a write.
  EXPECT_EQ(text(smb_error(EINVAL, "", Step::kCloseRead, w)).find("writing"), std::string::npos);
  EXPECT_NE(text(smb_error(EINVAL, "", Step::kRead, w)).find("SMB: reading ram/read-1.dat"),
            std::string::npos);
}

}  // namespace
}  // namespace cp::transfer
