// String and file helpers shared by every library: one trim, one split, one
// read-whole-file (the copies they replace lived in plan, probe, lab and tune).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp {

// Without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view s);
// The pieces between each `sep`, empty ones kept: split("a,,b", ',') is
// {"a", "", "b"}; split("", ',') is {""}.
std::vector<std::string_view> split(std::string_view s, char sep);
// The runs of non-whitespace: split_ws(" a  b\n") is {"a", "b"}.
std::vector<std::string_view> split_ws(std::string_view s);
// ASCII lower case.
std::string lower(std::string_view s);
// "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// yes/no, true/false, on/off, 1/0 (lower case); nullopt for anything else.
std::optional<bool> parse_yes_no(std::string_view s);

// The whole file, read to its end (so /proc and /sys files, whose size reads
// 0, work too); nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);
// The same into *out; false when it cannot (then *out is empty).
bool read_file(const std::string& path, std::string* out);

}  // namespace cp
