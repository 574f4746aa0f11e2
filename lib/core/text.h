// String and file helpers shared by every library: one trim, one split, one
// read-whole-file (the copies they replace lived in plan, probe, lab and tune).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp {

struct RunRecord;

// Without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view s);
// The pieces between each `sep`, empty ones kept: split("a,,b", ',') is
// {"a", "", "b"}; split("", ',') is {""}.
std::vector<std::string_view> split(std::string_view s, char sep);
// The runs of non-whitespace: split_ws(" a  b\n") is {"a", "b"}.
std::vector<std::string_view> split_ws(std::string_view s);
// Each run of whitespace made one space, leading and trailing dropped:
// squeeze_ws(" a\t b\n") is "a b".
std::string squeeze_ws(std::string_view s);
// ASCII lower case.
std::string lower(std::string_view s);
// "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// yes/no, true/false, on/off, 1/0 (lower case); nullopt for anything else.
std::optional<bool> parse_yes_no(std::string_view s);
// The whole of `s` as a number, read as std::stoi / std::stod read it
// (leading whitespace and a sign allowed); nullopt when it is none, anything
// follows it, or it is out of range.
std::optional<int> parse_int(const std::string& s);
std::optional<double> parse_double(const std::string& s);

// Strings from a peer or a file (hostnames, process names, error texts,
// facts), made safe to print on a terminal: each control character (C0, DEL,
// and C1 as UTF-8), each Unicode bidi override and each byte that is not
// valid UTF-8 is shown as an escape: "\n", "\r", "\t", "\x1b", "\u009b",
// "\u202e". Everything else, backslashes included, is kept.
// For one field, which must stay on its line: newlines escaped too.
std::string sanitize_field(std::string_view s);
// For whole lines of text (a message and its "fix:" line): newlines kept.
std::string sanitize_text(std::string_view s);
// A copy of `run` with every string sanitize_field'ed, those inside its JSON
// columns (facts, details, CPU summaries, params, plan) too: what text output
// renders, so a hostile hostname or process name reaches the terminal escaped.
// JSON that does not parse is left as it is (no reader shows it).
RunRecord sanitized_run(const RunRecord& run);

// The whole file, read to its end (so /proc and /sys files, whose size reads
// 0, work too); nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);
// The same into *out; false when it cannot (then *out is empty).
bool read_file(const std::string& path, std::string* out);

}  // namespace cp
