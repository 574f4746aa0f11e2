// Looking up and checking findings, for the analysis tests (not part of the
// library).
#pragma once

#include <gtest/gtest.h>

#include <string>

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

}  // namespace cp::analysis::testing
