// A run's samples for spreadsheets and scripts (`chokepoint export`).
#pragma once

#include <string>

#include "core/stored_run.h"

namespace cp::report {

// CSV (RFC 4180, header line first), one row per sample: run_id, run_label,
// stage_id, layer, where, stage_status, sample_id, seq, op, size, bytes,
// seconds, bytes_per_s, started_at, cache_possible, error; the busiest core
// and top process on each end (server_max_core_pct, server_top_process,
// client_...); then every scalar of the sample's details flattened
// ("details.tcp_info.rtt_us", "details.properties.max_read_size"), in the
// order they first appear. Sizes in bytes, times in seconds, rates in bytes/s.
std::string export_csv(const stored::Run& run);

// The same rows as JSON: {"run": {..., "degraded": [{"role", "fact", "method",
// "privilege"}]}, "columns": [...], "samples": [{column: value, "details": {...},
// "cpu": {...}}]}, with details and CPU summaries whole; "degraded" is
// report::degraded_facts(run).
std::string export_json(const stored::Run& run);

// One CSV text field: prefixed with ' when it starts with = + - @ TAB or CR
// (a spreadsheet would run it as a formula), then quoted when it holds a
// comma, quote, CR or LF. Every text cell goes through it: labels, errors,
// process names, details from the remote. Cells that are JSON numbers stay
// numbers (-5 is written -5); a text cell "-5" becomes '-5.
std::string csv_field(const std::string& s);

}  // namespace cp::report
