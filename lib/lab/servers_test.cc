#include "lab/servers.h"

#include <pwd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "lab/layout.h"

namespace cp::lab {
namespace {

TEST(ServersTest, RecordedPidsMustBeTheLabsServers) {
  LabState s = plan(LabOptions{}, "/srv/lab");
  EXPECT_FALSE(servers::ftpd_alive(s));
  EXPECT_FALSE(servers::smbd_alive(s));
  // A live process that is not vsftpd/smbd with the lab's config.
  s.server.ftpd_pid = getpid();
  s.server.smbd_pid = getpid();
  EXPECT_FALSE(servers::ftpd_alive(s));
  EXPECT_FALSE(servers::smbd_alive(s));
  // stop() leaves such a process alone and forgets the pids.
  servers::stop(s);
  EXPECT_EQ(s.server.ftpd_pid, 0);
  EXPECT_EQ(s.server.smbd_pid, 0);
}

TEST(ServersTest, DeletesOnlyAUserItCreated) {
  LabState s = plan(LabOptions{}, "/srv/lab");
  s.share_user = "root";  // exists, was not created by the lab
  s.share_user_created = false;
  EXPECT_NO_THROW(servers::delete_user(s));
  // Even if lab.json claims it, a user without the lab's comment stays.
  s.share_user_created = true;
  EXPECT_NO_THROW(servers::delete_user(s));
  EXPECT_NE(getpwnam("root"), nullptr);
}

}  // namespace
}  // namespace cp::lab
