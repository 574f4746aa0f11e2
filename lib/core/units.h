// Units used throughout: sizes in bytes, durations in seconds (double),
// throughput in MB/s where 1 MB = 10^6 bytes (as `time cp` and iperf report),
// link rates in bit/s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cp {

// "10MB" = 10^7, "1MiB" = 2^20, "4k" = 4096 (bare k/M/G are binary, as dd
// and fio read them), "123" = 123 bytes. Throws Error(kConfig) naming `what`.
uint64_t parse_size(std::string_view text, std::string_view what = "size");
// The largest rate parse_rate_bits takes: 100 Tbit/s, far beyond any link
// (and far inside uint64_t, which a larger figure could overflow).
constexpr double kMaxRateBits = 1e14;
// "1gbit", "200mbit", "500kbit", "1000000bit": bit/s, decimal as tc reads them.
// Throws Error(kConfig) naming `what` outside 1 bit/s .. kMaxRateBits.
uint64_t parse_rate_bits(std::string_view text, std::string_view what = "rate");
// "2s", "500ms", "1.5": seconds.
double parse_duration(std::string_view text, std::string_view what = "duration");

// 10000000 -> "10 MB", 1048576 -> "1 MiB", 1500000 -> "1.5 MB".
std::string format_size(uint64_t bytes);
// bytes/s -> "117 MB/s" (3 significant digits).
std::string format_mbps(double bytes_per_second);
// bit/s -> "1 Gbit/s", "200 Mbit/s".
std::string format_rate_bits(double bits_per_second);
// A fraction as a whole percentage: 0.123 -> "12 %".
std::string format_percent(double fraction);
// A relative change, signed, one decimal: 0.123 -> "+12.3 %", -0.05 -> "-5.0 %".
std::string format_change(double fraction);

constexpr double kMB = 1e6;

}  // namespace cp
