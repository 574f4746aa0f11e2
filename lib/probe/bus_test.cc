// The bus beneath a disk, on sysfs trees laid out as the kernel documents
// them (Documentation/ABI: ata_link's sata_spd, PCI's current_link_speed and
// current_link_width, USB's speed), made in a temporary directory.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "probe/platform.h"
#include "probe/sysinfo.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

namespace fs = std::filesystem;

class FakeSysfs {
 public:
  const std::string& root() const { return dir_.path(); }
  void file(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(root() + rel).parent_path());
    std::ofstream(root() + rel) << text << "\n";
  }
  void dir(const std::string& rel) { fs::create_directories(root() + rel); }
  // PCI function `rel`'s link: its speed ("8.0 GT/s PCIe") and width (lanes).
  void pci_link(const std::string& rel, const std::string& speed, const std::string& width) {
    file(rel + "/current_link_speed", speed);
    file(rel + "/current_link_width", width);
  }
  // /sys/dev/block/MAJ:MIN -> the device's directory.
  void dev(const std::string& majmin, const std::string& rel) {
    fs::create_directories(root() + "/dev/block");
    fs::create_symlink(root() + rel, root() + "/dev/block/" + majmin);
  }

 private:
  testing::TempDir dir_;
};

TEST(Bus, CeilingsAfterLineCoding) {
  EXPECT_EQ(os::sata_ceiling("3.0 Gbps"), 300'000'000u);  // seed 003: SATA2 300 MB/s
  EXPECT_EQ(os::sata_ceiling("6.0 Gbps"), 600'000'000u);
  EXPECT_EQ(os::sata_ceiling("<unknown>"), 0u);
  EXPECT_EQ(os::pcie_ceiling("2.5 GT/s PCIe", 4), 1'000'000'000u);  // seed 003: PCIe x4 1 GB/s
  EXPECT_EQ(os::pcie_ceiling("8.0 GT/s PCIe", 4), 3'938'461'538u);  // 128b/130b
  EXPECT_EQ(os::pcie_ceiling("8.0 GT/s PCIe", 0), 0u);
  EXPECT_EQ(os::usb_ceiling("480"), 60'000'000u);
  EXPECT_EQ(os::usb_ceiling("5000"), 500'000'000u);
  EXPECT_EQ(os::usb_ceiling("10000"), 1'212'121'212u);
}

// Whether `f` names a bus of `kind` whose link is `link`, with a payload
// ceiling of `ceiling` bytes/s; on failure, what it names.
::testing::AssertionResult on_bus(const std::optional<msg::BlockDeviceFacts>& f,
                                  const std::string& kind, const std::string& link,
                                  uint64_t ceiling) {
  if (!f || !f->bus) return ::testing::AssertionFailure() << "no bus";
  const msg::BusFacts& b = *f->bus;
  if (b.kind != kind || b.link != link || b.ceiling_bytes_per_s != ceiling)
    return ::testing::AssertionFailure()
           << b.kind << " at " << b.link << ", " << b.ceiling_bytes_per_s << " bytes/s";
  return ::testing::AssertionSuccess();
}

TEST(Bus, SataDiskNamesItsPortsNegotiatedSpeed) {
  FakeSysfs s;
  const std::string disk =
      "/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sda";
  s.dir(disk + "/queue");
  s.file(disk + "/sda1/partition", "1");
  // The AHCI controller's own PCIe link is not the disk's.
  s.pci_link("/devices/pci0000:00/0000:00:17.0", "8.0 GT/s PCIe", "1");
  s.file("/class/ata_link/link3/sata_spd", "3.0 Gbps");
  s.dev("8:1", disk + "/sda1");
  const auto f = block_device_facts(8, 1, s.root());
  EXPECT_TRUE(on_bus(f, "sata", "3.0 Gbps", 300'000'000u));
}

TEST(Bus, NvmeDiskNamesItsPciLinkAndWidth) {
  FakeSysfs s;
  const std::string fn = "/devices/pci0000:00/0000:00:1d.0/0000:03:00.0";
  s.dir(fn + "/nvme/nvme0/nvme0n1/queue");
  s.pci_link(fn, "8.0 GT/s PCIe", "4");
  s.dev("259:0", fn + "/nvme/nvme0/nvme0n1");
  const auto f = block_device_facts(259, 0, s.root());
  EXPECT_TRUE(on_bus(f, "pcie", "8.0 GT/s PCIe x4", os::pcie_ceiling("8.0 GT/s", 4)));
}

TEST(Bus, UsbDiskNamesTheUsbLinkNotItsHostController) {
  FakeSysfs s;
  const std::string usb = "/devices/pci0000:00/0000:00:14.0/usb2/2-1";
  const std::string disk = usb + "/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb";
  s.dir(disk + "/queue");
  s.file(usb + "/speed", "5000");
  s.file(usb + "/busnum", "2");
  s.pci_link("/devices/pci0000:00/0000:00:14.0", "8.0 GT/s PCIe", "1");
  s.dev("8:16", disk);
  const auto f = block_device_facts(8, 16, s.root());
  EXPECT_TRUE(on_bus(f, "usb", "5000 Mbit/s", 500'000'000u));
}

TEST(Bus, MdArrayHasNoBusButEachMemberHasItsOwn) {
  FakeSysfs s;
  const std::string sata = "/devices/pci0000:00/0000:00:17.0";
  s.file(sata + "/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2/partition", "2");
  s.file(sata + "/ata2/host1/target1:0:0/1:0:0:0/block/sdb/sdb2/partition", "2");
  s.file("/class/ata_link/link1/sata_spd", "6.0 Gbps");
  s.file("/class/ata_link/link2/sata_spd", "1.5 Gbps");
  s.dir("/devices/virtual/block/md0/queue");
  s.dir("/devices/virtual/block/md0/slaves");
  fs::create_symlink(s.root() + sata + "/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2",
                     s.root() + "/devices/virtual/block/md0/slaves/sda2");
  fs::create_symlink(s.root() + sata + "/ata2/host1/target1:0:0/1:0:0:0/block/sdb/sdb2",
                     s.root() + "/devices/virtual/block/md0/slaves/sdb2");
  s.dev("9:0", "/devices/virtual/block/md0");
  const auto f = block_device_facts(9, 0, s.root());
  ASSERT_TRUE(f && f->bus);
  EXPECT_EQ(f->bus->kind, "virtual");
  ASSERT_EQ(f->member_buses.size(), 2u);
  EXPECT_EQ(f->member_buses[0].member, "sda2");
  EXPECT_EQ(f->member_buses[0].bus.link, "6.0 Gbps");
  EXPECT_EQ(f->member_buses[1].member, "sdb2");
  EXPECT_EQ(f->member_buses[1].bus.ceiling_bytes_per_s, 150'000'000u);
}

TEST(Bus, LoopAndVirtioDisksAreVirtual) {
  FakeSysfs s;
  s.dir("/devices/virtual/block/loop0/queue");
  s.dev("7:0", "/devices/virtual/block/loop0");
  s.dir("/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/queue");
  s.file("/devices/pci0000:00/0000:00:04.0/current_link_speed", "Unknown");
  s.dev("254:0", "/devices/pci0000:00/0000:00:04.0/virtio1/block/vda");
  for (auto [maj, min] : {std::pair{7u, 0u}, std::pair{254u, 0u}}) {
    const auto f = block_device_facts(maj, min, s.root());
    ASSERT_TRUE(f && f->bus);
    EXPECT_EQ(f->bus->kind, "virtual");
    EXPECT_EQ(f->bus->ceiling_bytes_per_s, 0u);
  }
}

TEST(Bus, ADiskSysfsSaysNothingAboutHasNoBus) {
  FakeSysfs s;
  s.dir("/devices/platform/soc/mmc0/block/mmcblk0/queue");
  s.dev("179:0", "/devices/platform/soc/mmc0/block/mmcblk0");
  const auto f = block_device_facts(179, 0, s.root());
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->bus.has_value());
}

}  // namespace
}  // namespace cp::probe
