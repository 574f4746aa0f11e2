// The bus beneath each disk: the disk rows held against their link's
// theoretical (payload after line coding) and effective (kBusEffective of it)
// ceilings, and the finding when a disk is at the effective one.
#include <string>

#include "analysis/judge.h"
#include "core/facts_message.h"

namespace cp::analysis {
namespace {

BusLinkInfo link_of(const msg::BusFacts& b, std::string member) {
  return {std::move(member), b.kind, b.link, static_cast<double>(b.ceiling_bytes_per_s)};
}

}  // namespace

BusCeiling disk_bus_of(const msg::BlockDeviceFacts& device) {
  BusCeiling c;
  if (!device.bus) return c;  // an older agent, or sysfs did not tell
  if (device.bus->kind != "virtual") {
    c.kind = device.bus->kind;
    c.links.push_back(link_of(*device.bus, ""));
    c.theoretical = c.links[0].ceiling;
    return c;
  }
  // md/LVM/dm: the members' links. Their ceilings summed are the most the
  // array's members carry together (a RAID 1 write carries the data once per
  // member, so this errs high: it never names the bus where it is not).
  bool every_member_known = true, any_real = false;
  for (const msg::MemberBusFacts& m : device.member_buses) {
    c.links.push_back(link_of(m.bus, m.member));
    any_real = any_real || m.bus.kind != "virtual";
    // A member on no bus (a loop device in the array) or one whose link does
    // not say: no ceiling holds for the whole.
    if (m.bus.kind == "virtual" || m.bus.ceiling_bytes_per_s == 0) every_member_known = false;
    c.theoretical += static_cast<double>(m.bus.ceiling_bytes_per_s);
  }
  if (!any_real) {
    c.kind = "virtual";  // a loop device, or an array of them: no bus
    c.links.clear();
    c.theoretical = 0;
    return c;
  }
  c.kind = "members";
  if (!every_member_known) c.theoretical = 0;
  return c;
}

void attach_buses(Analysis& a) {
  for (Row& r : a.rows) {
    if (r.layer != "disk") continue;
    r.bus = host_facts(a, r.where).disk_bus;
    r.bus_ratio = r.bus.theoretical > 0 && r.rate.n > 0 ? r.rate.median / r.bus.theoretical : 0;
  }
}

bool at_bus_ceiling(const Row& disk) {
  return disk.layer == "disk" && disk.bus.theoretical > 0 && disk.bus_ratio >= kBusEffective;
}

void set_bus(Finding& f, const Row& disk) {
  f.layer = disk.where + " bus";
  f.cap = disk.key;
  f.numbers["bus_ratio"] = disk.bus_ratio;
  f.numbers["bus_theoretical_bytes_per_s"] = disk.bus.theoretical;
  f.numbers["bus_effective_bytes_per_s"] = disk.bus.effective();
  f.words["bus_kind"] = disk.bus.kind;
  f.words["disk_where"] = disk.where;
  f.bus = disk.bus;
}

}  // namespace cp::analysis
