// Linux: the bus beneath a disk (SATA, PCIe, USB), from sysfs (platform.h).
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/text.h"
#include "probe/platform.h"

namespace cp::probe::os {
namespace {

std::string read_trimmed(const std::string& path) {
  std::string text;
  if (!read_file(path, &text)) return {};
  return std::string(trim(text));
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The leading number of "6.0 Gbps", "8.0 GT/s PCIe", "5000"; 0 when none.
double leading_number(std::string_view text) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && p != text.data() ? v : 0;
}

// "ata3" within a device path: the number, or -1.
int ata_port(const std::string& path) {
  size_t at = 0;
  while ((at = path.find("/ata", at)) != std::string::npos) {
    at += 4;
    size_t end = at;
    while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
    if (end > at && (end == path.size() || path[end] == '/')) {
      return std::atoi(path.substr(at, end - at).c_str());
    }
  }
  return -1;
}

std::string parent_of(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? std::string() : dir.substr(0, slash);
}

}  // namespace

uint64_t sata_ceiling(std::string_view sata_spd) {
  // 8b/10b: 8 payload bits per 10 on the wire.
  return static_cast<uint64_t>(std::llround(leading_number(sata_spd) * 1e9 * 0.8 / 8));
}

uint64_t pcie_ceiling(std::string_view current_link_speed, int width) {
  const double gts = leading_number(current_link_speed);
  if (gts <= 0 || width <= 0) return 0;
  const double coding = gts <= 5.0 ? 8.0 / 10 : 128.0 / 130;
  return static_cast<uint64_t>(std::llround(gts * 1e9 * coding / 8 * width));
}

uint64_t usb_ceiling(std::string_view speed_mbit) {
  const double mbit = leading_number(speed_mbit);
  if (mbit <= 0) return 0;
  const double coding = mbit < 5000 ? 1.0 : mbit < 10000 ? 8.0 / 10 : 128.0 / 132;
  return static_cast<uint64_t>(std::llround(mbit * 1e6 * coding / 8));
}

std::optional<BusLink> block_bus(const std::string& disk_dir, const std::string& sys_root) {
  if (disk_dir.find("/devices/virtual/") != std::string::npos ||
      disk_dir.find("/virtio") != std::string::npos) {
    return BusLink{"virtual", "", 0};
  }
  // SATA: the port's negotiated speed (the controller's own PCIe link is wider).
  if (const int port = ata_port(disk_dir); port >= 0) {
    const std::string spd =
        read_trimmed(sys_root + "/class/ata_link/link" + std::to_string(port) + "/sata_spd");
    if (!spd.empty()) return BusLink{"sata", spd, sata_ceiling(spd)};
  }
  // The nearest USB device (it has `speed` and `busnum`) or PCI function (it
  // has `current_link_speed`) above the disk: USB first, as its host controller
  // is itself a PCIe device further up.
  for (std::string dir = parent_of(disk_dir); dir.size() > sys_root.size(); dir = parent_of(dir)) {
    if (exists(dir + "/busnum") && exists(dir + "/speed")) {
      const std::string speed = read_trimmed(dir + "/speed");
      return BusLink{"usb", speed + " Mbit/s", usb_ceiling(speed)};
    }
    if (exists(dir + "/current_link_speed")) {
      const std::string speed = read_trimmed(dir + "/current_link_speed");
      const int width = static_cast<int>(leading_number(read_trimmed(dir + "/current_link_width")));
      return BusLink{"pcie", speed + " x" + std::to_string(width), pcie_ceiling(speed, width)};
    }
  }
  return std::nullopt;
}

}  // namespace cp::probe::os
