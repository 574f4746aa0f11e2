// A ladder row's name in words, rendered from its fields (analysis::RowIdentity),
// for every report: the text and its JSON, HTML, export and compare all name
// a row through here, so they never disagree and no rule builds English.
#pragma once

#include <string>
#include <vector>

#include "analysis/ladder.h"

namespace cp::report {

// "server disk read, 100 MB files", "server disk synchronous write, 1 MB files",
// "TCP server -> client", "TCP server -> client, 2 streams", "SMB from RAM read,
// 100 MB files", "SMB from RAM seqread, 1 MiB requests" (the size scan),
// "server disk random create, 4 KiB (ops/s)", "SMB from disk create, 4 KiB files
// (ops/s)", "link (nominal, tc rate on eth0 (server))".
std::string row_label(const analysis::RowIdentity& r);

// Where the nominal link speed comes from: "set in the plan", "tc rate on eth0
// (server)", "link speed of eth0 (client)"; "" unknown.
std::string link_source_text(const analysis::LinkSource& s);

// The top process of the sample with a row's busiest core: "smbd at 100 %";
// "" when the sample listed none.
std::string max_core_process_text(const analysis::Row& r);

// How a finding names a row it cites (Cited::named): "server disk", "the
// server disk", "TCP", "SMB from RAM", "SMB from RAM read", its label; "" when
// the rule names it not.
std::string cited_name(const analysis::Cited& c);
// What a cited row does in a finding's sentence: "reads", "writes", "writes
// synchronously" (a disk), "carries" (TCP), "moves" (a protocol).
std::string cited_verb(const analysis::Cited& c);

// Why a row's figure may not be its layer's own, in words: "3 of 5 samples of
// server disk read, 100 MB files ran without O_DIRECT (the filesystem refused
// it) ..., so the page cache may have served them".
std::string trust_reason_text(const analysis::TrustReason& t);
// Several, joined by "; " (a row's cache reasons).
std::string trust_reasons_text(const std::vector<analysis::TrustReason>& reasons);
// What fixes a "medium.*" reason: "set [server] disk_dir to a directory on the
// disk under test".
std::string medium_fix_text(const analysis::TrustReason& t);

// The label of a headline's capping row: rendered from Headline::cap_row,
// else as stored (history's summaries); "" when none caps.
std::string cap_label(const analysis::Headline& h);

}  // namespace cp::report
