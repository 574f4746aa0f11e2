#include "core/mountinfo.h"

#include <gtest/gtest.h>

namespace cp {

namespace {
// A parsed line's fields in MountInfoLine's order, to compare whole lines.
std::vector<std::string> fields(const MountInfoLine& m) {
  return {m.dev, m.root, m.mount_point, m.options, m.fstype, m.source, m.super_options};
}
}  // namespace

TEST(MountInfo, ParsesFieldsAndOptionalTags) {
  auto m = parse_mountinfo(
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "35 24 0:30 / /sys/fs/cgroup/cpu rw,nosuid master:9 shared:2 - cgroup cgroup rw,cpu\n"
      "40 22 0:40 /sub /mnt/with\\040space rw - tmpfs my\\040src rw,size=1024k\n"
      "garbage line\n");
  ASSERT_EQ(m.size(), 3u);
  using Fields = std::vector<std::string>;
  EXPECT_EQ(fields(m[0]), (Fields{"254:0", "/", "/", "rw,relatime", "ext4", "/dev/vda", "rw"}));
  EXPECT_EQ(fields(m[1]),
            (Fields{"0:30", "/", "/sys/fs/cgroup/cpu", "rw,nosuid", "cgroup", "cgroup", "rw,cpu"}));
  EXPECT_EQ(fields(m[2]),
            (Fields{"0:40", "/sub", "/mnt/with space", "rw", "tmpfs", "my src", "rw,size=1024k"}));
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

TEST(MountHolding, PrefersThePathsDeviceThenTheDeepestThenTheLast) {
  const std::string text =
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "30 22 0:25 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw,size=100k\n"
      "31 22 0:26 / /mnt/my\\040disk rw master:3 - xfs /dev/sdb1 rw\n"
      "32 22 0:27 / /mnt/over rw - ext2 /dev/sdc rw\n"
      "33 22 0:28 / /mnt/over rw - btrfs /dev/sdd rw\n"
      "34 22 254:0 /srv /mnt/bind rw - ext4 /dev/vda rw\n"
      "garbage line\n";
  auto type = [&](const std::string& path, const std::string& dev) {
    return mount_holding(text, path, dev).fstype;
  };
  EXPECT_EQ(type("/home/x", "254:0"), "ext4");
  EXPECT_EQ(type("/dev/shm/f", "0:25"), "tmpfs");
  EXPECT_EQ(type("/dev/shmx", "254:0"), "ext4");
  MountEntry spaced = mount_holding(text, "/mnt/my disk/a", "0:26");
  EXPECT_EQ(spaced.fstype, "xfs");
  EXPECT_EQ(spaced.mount_point, "/mnt/my disk");
  EXPECT_EQ(spaced.source, "/dev/sdb1");
  // The later of two mounts on one point hides the earlier one.
  EXPECT_EQ(type("/mnt/over/a", "0:99"), "btrfs");
  // Same device preferred over a deeper mount point of another device.
  EXPECT_EQ(type("/mnt/over/a", "0:27"), "ext2");
  EXPECT_EQ(mount_holding(text, "/mnt/bind/x", "254:0").mount_point, "/mnt/bind");
  EXPECT_EQ(mount_holding("", "/x", "1:1").fstype, "");
}

TEST(MountHolding, WithoutADevicePicksTheLongestPrefix) {
  const std::string info =
      "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "30 22 0:40 / /mnt rw shared:2 - tmpfs tmpfs rw,size=10k\n"
      "31 30 0:41 / /mnt/nas\\040box rw,relatime - cifs //nas/share rw,vers=3.1.1,rsize=4194304\n"
      "32 30 0:42 / /mnt/nasother rw - nfs4 nas:/x rw,vers=4.2\n"
      "garbage line\n";
  MountEntry m = mount_holding(info, "/mnt/nas box/dir");
  EXPECT_EQ(m.mount_point, "/mnt/nas box");
  EXPECT_EQ(m.fstype, "cifs");
  EXPECT_EQ(m.source, "//nas/share");
  EXPECT_NE(m.options.find("vers=3.1.1"), std::string::npos);
  m = mount_holding(info, "/mnt/nasother");
  EXPECT_EQ(m.fstype, "nfs4");
  m = mount_holding(info, "/mnt/na");
  EXPECT_EQ(m.fstype, "tmpfs");
  m = mount_holding(info, "/home");
  EXPECT_EQ(m.fstype, "ext4");
  EXPECT_EQ(mount_holding("", "/x").mount_point, "");
}

}  // namespace cp
