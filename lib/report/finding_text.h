// The English of the verdict, rendered from structured findings
// (analysis::Finding: rule id, numbers, evidence) so that text, JSON and HTML
// say the same and a wording change touches no rule.
#pragma once

#include <map>
#include <string>

#include "analysis/ladder.h"

namespace cp::report {

// The finding in one sentence with the numbers that show it: its evidence,
// then its hints ("; hint"), a note on figures a cache may have served, and a
// full stop.
std::string finding_text(const analysis::Finding& f);
// The same without the hints (the HTML lists them on their own lines).
std::string finding_sentence(const analysis::Finding& f);

// The finding's evidence words (Finding::words) with those rendered from its
// structure: "reason" from its trust reasons, "fix" (trust.medium) from its
// medium reason. The text and the JSON read them here.
std::map<std::string, std::string> finding_words(const analysis::Finding& f);

// How sure a finding is: "certain" | "likely" | "cannot tell".
const char* confidence_name(analysis::Confidence c);

// The verdict in one sentence: the headline finding's text, or why there is none.
std::string headline_text(const analysis::Headline& h);
std::string headline_text(const analysis::Analysis& a);

// Why a row is CPU-bound, in a clause: "the server's CPU: smbd, one thread at
// 98 % of a core", "the CPU quota of smbd on the server (10 % of a core; it
// used 11 %)", "all cores busy on the one machine both ends share (94 %; ...)".
std::string cpu_text(const analysis::CpuBound& c);
// The same in a few words for tables: "cpu: smbd at its quota 20 % (server)",
// "cpu: a thread of smbd at 98 % (server)", "cpu: all cores 99 % busy (both ends)".
std::string cpu_brief(const analysis::CpuBound& c);

// A disk row against its bus, for the ladder: "80 % of SATA 3.0 Gbps (300 MB/s
// theoretical, 240 MB/s effective)", "no bus: a virtual disk"; "" unknown.
std::string bus_ladder_text(const analysis::Row& r);

}  // namespace cp::report
