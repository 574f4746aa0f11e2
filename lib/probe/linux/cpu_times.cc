// Linux: per-core CPU time from /proc/stat (platform.h).
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "core/mountinfo.h"
#include "core/text.h"
#include "probe/cpu.h"
#include "probe/platform.h"

namespace cp::probe {

namespace {

bool to_u64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<CpuTimes> parse_proc_stat(std::string_view text) {
  std::vector<CpuTimes> cores;
  for (std::string_view line : split_nonempty(text, '\n')) {
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    std::vector<std::string_view> f = split_nonempty(line, ' ');
    size_t index = 0;
    auto [p, ec] = std::from_chars(f[0].data() + 3, f[0].data() + f[0].size(), index);
    if (ec != std::errc() || p != f[0].data() + f[0].size() || index > 65535) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice (older kernels: fewer),
    // in ticks; guest is already counted in user.
    uint64_t v[8] = {};
    bool ok = f.size() >= 5;
    for (size_t k = 0; ok && k < 8 && k + 1 < f.size(); ++k) ok = to_u64(f[k + 1], &v[k]);
    if (!ok) continue;
    if (cores.size() <= index) cores.resize(index + 1);
    cores[index].busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    cores[index].total = cores[index].busy + v[3] + v[4];
    cores[index].system = v[2];
    cores[index].softirq = v[5] + v[6];
  }
  return cores;
}

std::vector<CpuTimes> os::read_core_times(const std::string& proc_root) {
  std::string text;
  if (!read_file(proc_root + "/stat", &text)) return {};
  return parse_proc_stat(text);
}

}  // namespace cp::probe
