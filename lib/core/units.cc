#include "core/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <span>

#include "core/error.h"
#include "core/text.h"

namespace cp {
namespace {

// Splits "  12.5MiB " into 12.5 and "mib"; throws when there is no number.
std::pair<double, std::string> split_number(std::string_view text, std::string_view what,
                                            std::string_view example) {
  std::string s = lower(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t start = i;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data() + start, s.data() + i, value);
  if (start == i || ec != std::errc() || ptr != s.data() + i || !std::isfinite(value) ||
      value < 0) {
    throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not a number with a unit", what, text),
                fmt::format("write it like '{}'", example));
  }
  std::string unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  return {value, unit};
}

// A unit's name (lower case) and what one of it is worth.
struct Unit {
  std::string_view name;
  double mult;
};
constexpr double kKi = 1024.0;
constexpr Unit kSizeUnits[] = {{"", 1},
                               {"b", 1},
                               {"kb", 1e3},
                               {"mb", 1e6},
                               {"gb", 1e9},
                               {"tb", 1e12},
                               {"k", kKi},
                               {"kib", kKi},
                               {"m", kKi * 1024},
                               {"mib", kKi * 1024},
                               {"g", kKi * 1024 * 1024},
                               {"gib", kKi * 1024 * 1024},
                               {"t", kKi * 1024 * 1024 * 1024},
                               {"tib", kKi * 1024 * 1024 * 1024}};
// Bits per second, as tc reads them.
constexpr Unit kRateUnits[] = {{"bit", 1}, {"bps", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};

// What one `unit` is worth among `units`; throws Error(kConfig) naming the
// `kind` of unit ("size") and the `fix` for one it does not know.
double multiplier(std::span<const Unit> units, const std::string& unit, std::string_view text,
                  std::string_view what, const char* kind, const char* fix) {
  for (const Unit& u : units) {
    if (u.name == unit) return u.mult;
  }
  throw Error(ErrorKind::kConfig,
              fmt::format("{}: unknown {} unit '{}' in '{}'", what, kind, unit, text), fix);
}

}  // namespace

uint64_t parse_size(std::string_view text, std::string_view what) {
  auto [v, unit] = split_number(text, what, "10MB, 1MiB or 4k");
  double bytes = v * multiplier(kSizeUnits, unit, text, what, "size",
                                "use B, kB, MB, GB (powers of 10) or KiB, MiB, GiB (powers of 2)");
  if (bytes > 1.8e19 || bytes != std::floor(bytes)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: '{}' is not a whole number of bytes", what, text));
  }
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_rate_bits(std::string_view text, std::string_view what) {
  auto [v, unit] = split_number(text, what, "1gbit or 200mbit");
  const double bits =
      v * multiplier(kRateUnits, unit, text, what, "rate",
                     "use bit, kbit, mbit or gbit (bits per second, as tc reads them)");
  if (bits < 1 || bits > kMaxRateBits) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: '{}' is outside 1 bit .. {} gbit", what, text, kMaxRateBits / 1e9),
                "give a rate from 1bit to 100000gbit (bits per second), like 1gbit or 200mbit");
  }
  return static_cast<uint64_t>(bits);
}

double parse_duration(std::string_view text, std::string_view what) {
  auto [v, unit] = split_number(text, what, "2s or 500ms");
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1e3;
  if (unit == "us") return v / 1e6;
  if (unit == "m" || unit == "min") return v * 60;
  throw Error(ErrorKind::kConfig,
              fmt::format("{}: unknown time unit '{}' in '{}'", what, unit, text),
              "use s, ms or min");
}

namespace {
std::string trim_number(double v) {
  std::string s = fmt::format("{:.3g}", v);
  if (s.find('e') != std::string::npos) s = fmt::format("{:.0f}", v);
  return s;
}
}  // namespace

std::string format_size(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  auto is_multiple = [&](uint64_t unit) { return bytes >= unit && bytes % unit == 0; };
  if (is_multiple(1ull << 30)) return fmt::format("{} GiB", bytes >> 30);
  if (is_multiple(1ull << 20)) return fmt::format("{} MiB", bytes >> 20);
  if (is_multiple(1ull << 10) && bytes < 1000000) return fmt::format("{} KiB", bytes >> 10);
  if (b >= 1e9) return trim_number(b / 1e9) + " GB";
  if (b >= 1e6) return trim_number(b / 1e6) + " MB";
  if (b >= 1e3) return trim_number(b / 1e3) + " kB";
  return fmt::format("{} B", bytes);
}

std::string format_mbps(double bytes_per_second) {
  return trim_number(bytes_per_second / kMB) + " MB/s";
}

std::string format_rate_bits(double bps) {
  if (bps >= 1e9) return trim_number(bps / 1e9) + " Gbit/s";
  if (bps >= 1e6) return trim_number(bps / 1e6) + " Mbit/s";
  if (bps >= 1e3) return trim_number(bps / 1e3) + " kbit/s";
  return trim_number(bps) + " bit/s";
}

std::string format_percent(double fraction) { return fmt::format("{:.0f} %", fraction * 100); }

std::string format_change(double fraction) { return fmt::format("{:+.1f} %", fraction * 100); }

}  // namespace cp
