#include "core/mountinfo.h"

#include <gtest/gtest.h>

namespace cp {

TEST(MountInfo, ParsesFieldsAndOptionalTags) {
  auto m = parse_mountinfo(
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "35 24 0:30 / /sys/fs/cgroup/cpu rw,nosuid master:9 shared:2 - cgroup cgroup rw,cpu\n"
      "40 22 0:40 /sub /mnt/with\\040space rw - tmpfs my\\040src rw,size=1024k\n"
      "garbage line\n");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].dev, "254:0");
  EXPECT_EQ(m[0].fstype, "ext4");
  EXPECT_EQ(m[0].source, "/dev/vda");
  EXPECT_EQ(m[1].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m[1].super_options, "rw,cpu");
  EXPECT_EQ(m[2].root, "/sub");
  EXPECT_EQ(m[2].mount_point, "/mnt/with space");
  EXPECT_EQ(m[2].source, "my src");
  EXPECT_EQ(m[2].options, "rw");
}

TEST(MountInfo, SplitAndUnescape) {
  EXPECT_EQ(split_nonempty("a,,b,", ',').size(), 2u);
  EXPECT_EQ(unescape_mountinfo("a\\134b\\011"), "a\\b\t");
  EXPECT_EQ(unescape_mountinfo("tail\\04"), "tail\\04");  // truncated escape kept
}

TEST(MountInfo, UnderMountPointNeedsAWholeComponent) {
  EXPECT_TRUE(under_mount_point("/mnt/nas", "/mnt/nas"));
  EXPECT_TRUE(under_mount_point("/mnt/nas/dir", "/mnt/nas"));
  EXPECT_FALSE(under_mount_point("/mnt/nasother", "/mnt/nas"));
  EXPECT_FALSE(under_mount_point("/mnt", "/mnt/nas"));
  EXPECT_TRUE(under_mount_point("/anything", "/"));
}

}  // namespace cp
