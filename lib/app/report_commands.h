// The reporting commands over stored runs: `history`, `compare`, `export`,
// `prune`, and the
// HTML file that `show --html` and `diagnose --html` write. Each command
// writes its report to `out` and returns the exit code; bad arguments and
// missing runs throw cp::Error (kUsage), unwritable files Error (kIo).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "core/stored_run.h"

namespace cp::app {

// chokepoint compare A B [--db F] [--json] [--html FILE]
int compare_command(const std::vector<std::string>& args, std::ostream& out);

// chokepoint history [--db F] [--label L] [--host H] [--since D] [--limit N] [--json]
//                   [--trend PATH [--html FILE]]
int history_command(const std::vector<std::string>& args, std::ostream& out);

// chokepoint prune (--before DATE | --keep N) [--labelled] [--tune-runs] [--dry-run] [--db F]
int prune_command(const std::vector<std::string>& args, std::ostream& out);

// chokepoint export RUN [--format csv|json] [--db F] [--output FILE]
int export_command(const std::vector<std::string>& args, std::ostream& out);

// The run as a command that prints text shows it (`text`): every string a
// host or peer chose escaped for the terminal (stored::sanitized), so that it
// is judged once, as printed, and the HTML written beside the text agrees
// with it; otherwise (JSON, which escapes its own) as stored. A run with
// nothing to escape is the same either way.
stored::Run as_shown(stored::Run run, bool text);

// Writes the self-contained HTML report of `run` (analyzed as `a`) to `path`.
void write_run_html(const stored::Run& run, const analysis::Analysis& a, const std::string& path);

// Writes `content` to `path` through a temporary file renamed over it, so a
// reader never sees half a report; the temporary's name is random and it is
// created O_EXCL|O_NOFOLLOW. Error(kIo) naming the path when it cannot.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace cp::app
