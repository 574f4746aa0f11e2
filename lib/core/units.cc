#include "core/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

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

}  // namespace

uint64_t parse_size(std::string_view text, std::string_view what) {
  auto [v, unit] = split_number(text, what, "10MB, 1MiB or 4k");
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  else if (unit == "k" || unit == "kib")
    mult = 1024.0;
  else if (unit == "m" || unit == "mib")
    mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: unknown size unit '{}' in '{}'", what, unit, text),
                "use B, kB, MB, GB (powers of 10) or KiB, MiB, GiB (powers of 2)");
  double bytes = v * mult;
  if (bytes > 1.8e19 || bytes != std::floor(bytes)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: '{}' is not a whole number of bytes", what, text));
  }
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_rate_bits(std::string_view text, std::string_view what) {
  auto [v, unit] = split_number(text, what, "1gbit or 200mbit");
  double mult;
  if (unit == "bit" || unit == "bps")
    mult = 1;
  else if (unit == "kbit")
    mult = 1e3;
  else if (unit == "mbit")
    mult = 1e6;
  else if (unit == "gbit")
    mult = 1e9;
  else
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: unknown rate unit '{}' in '{}'", what, unit, text),
                "use bit, kbit, mbit or gbit (bits per second, as tc reads them)");
  const double bits = v * mult;
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
