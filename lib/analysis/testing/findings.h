// Looking up and checking findings, for the analysis tests (not part of the
// library).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/ladder.h"

namespace cp::analysis::testing {

// The analysis of a stored run, decoded as the store returns it.
inline Analysis analyzed(const RunRecord& run) { return analyze(stored::decode(run)); }

// The first finding on `path` ("server -> client", "smb ram read", "tcp" ...), or nullptr.
inline const Finding* finding(const Analysis& a, const std::string& path) {
  for (const auto& f : a.findings)
    if (f.path == path) return &f;
  return nullptr;
}

// The first finding made by `rule` ("files.disk" ...), or nullptr.
inline const Finding* finding_by_rule(const Analysis& a, const std::string& rule) {
  for (const auto& f : a.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

// Whether `f` is a finding naming `layer`; on failure, says what it is.
inline ::testing::AssertionResult names_layer(const Finding* f, const std::string& layer) {
  if (f == nullptr) return ::testing::AssertionFailure() << "no finding";
  if (f->layer != layer)
    return ::testing::AssertionFailure() << f->rule << " names " << f->layer << ", not " << layer;
  return ::testing::AssertionSuccess();
}

// Whether `f` is a finding of `rule` naming `layer`; on failure, says what it is.
inline ::testing::AssertionResult names_layer(const Finding* f, const std::string& rule,
                                              const std::string& layer) {
  if (f != nullptr && f->rule != rule)
    return ::testing::AssertionFailure()
           << "by " << f->rule << " (names " << f->layer << "), not " << rule;
  return names_layer(f, layer);
}

// Whether `f` names `layer`, capped by the row (or "link") `cap`; on failure,
// says what it is.
inline ::testing::AssertionResult names_cap(const Finding* f, const std::string& layer,
                                            const std::string& cap) {
  if (auto named = names_layer(f, layer); !named) return named;
  if (f->cap != cap)
    return ::testing::AssertionFailure() << f->rule << " caps at " << f->cap << ", not " << cap;
  return ::testing::AssertionSuccess();
}

// Whether `f` names the probe, its figure a lower bound of the layer; on
// failure, says what it is.
inline ::testing::AssertionResult names_lower_bound(const Finding* f) {
  if (auto named = names_layer(f, "probe"); !named) return named;
  if (!f->lower_bound) return ::testing::AssertionFailure() << f->rule << " is no lower bound";
  return ::testing::AssertionSuccess();
}

// Whether `f` names one server setting, `parameter` set to `value`; on
// failure, says what it names.
inline ::testing::AssertionResult names_setting(const Finding* f, const std::string& parameter,
                                                const std::string& value) {
  if (f == nullptr) return ::testing::AssertionFailure() << "no finding";
  if (f->settings.size() != 1)
    return ::testing::AssertionFailure()
           << f->rule << " names " << f->settings.size() << " settings";
  const SettingFound& s = f->settings[0];
  if (s.parameter != parameter || s.value != value)
    return ::testing::AssertionFailure() << f->rule << " names " << s.parameter << " = " << s.value;
  return ::testing::AssertionSuccess();
}

// Whether `f` is undecided for `reason` (and, when given, between
// `candidates`); on failure, says what it is.
inline ::testing::AssertionResult undecided(const Finding* f, const std::string& reason,
                                            const std::vector<std::string>& candidates = {}) {
  if (auto named = names_layer(f, "undecided"); !named) return named;
  if (f->undecided_reason != reason)
    return ::testing::AssertionFailure()
           << "undecided for " << f->undecided_reason << ", not " << reason;
  if (!candidates.empty() && f->candidates != candidates)
    return ::testing::AssertionFailure() << "between " << ::testing::PrintToString(f->candidates);
  return ::testing::AssertionSuccess();
}

}  // namespace cp::analysis::testing
