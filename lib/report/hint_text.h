// The English of a hint (analysis::Hint): what to change and the figures
// that triggered it, rendered here so that a wording change touches no rule.
#pragma once

#include <string>

#include "analysis/ladder.h"

namespace cp::report {

// "MTU 9000 on the server but 1500 on the client: set the same MTU on both ends
// and every switch between them"; a hint id it does not know aborts (a bug).
std::string hint_text(const analysis::Hint& h);
// The setting a "server.*" hint names, without its explanation:
// "smb2 max read = 65536".
std::string hint_setting(const analysis::Hint& h);
// What a costly setting costs (its cost id, analysis::SettingFound::cost) in
// words: "a flush (fsync) after every write: writes at the disk's synchronous
// rate"; an id it does not know aborts (a bug).
std::string setting_cost_text(const std::string& id);
// What made a costly setting's cost show (analysis::SettingFound::evidence,
// one of analysis::kSettingEvidenceIds): "NFS from disk writes 40.1 MB/s,
// within 25 % of the server disk's synchronous write rate (...)".
std::string setting_evidence_text(const analysis::Hint& evidence);

}  // namespace cp::report
