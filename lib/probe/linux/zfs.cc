// Linux (OpenZFS): the ARC's size and ceiling from the SPL kstat file
// /proc/spl/kstat/zfs/arcstats (platform.h). FreeBSD has the same figures as
// sysctls kstat.zfs.misc.arcstats.* (docs/porting.md).
#include <charconv>
#include <string>

#include "core/mountinfo.h"
#include "core/text.h"
#include "probe/platform.h"

namespace cp::probe::os {

std::optional<ArcStats> parse_arcstats(std::string_view text) {
  // A kstat header line, then "name type data": "c_max  4  8589934592".
  ArcStats a;
  bool have_max = false;
  for (std::string_view line : split_nonempty(text, '\n')) {
    std::vector<std::string_view> f = split_nonempty(line, ' ');
    if (f.size() != 3) continue;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), v);
    if (ec != std::errc() || p != f[2].data() + f[2].size()) continue;
    if (f[0] == "size") a.size = v;
    if (f[0] == "c") a.c = v;
    if (f[0] == "c_max") {
      a.c_max = v;
      have_max = true;
    }
  }
  if (!have_max) return std::nullopt;
  return a;
}

std::optional<ArcStats> read_arc_stats(const std::string& proc_root) {
  std::string text;
  if (!read_file(proc_root + "/spl/kstat/zfs/arcstats", &text)) return std::nullopt;
  return parse_arcstats(text);
}

}  // namespace cp::probe::os
