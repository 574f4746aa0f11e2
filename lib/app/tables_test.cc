// The tables that must agree across libraries: the Samba parameters whose
// effective value the server's facts hold (probe) cover every one the verdict's
// table of costly settings (analysis) and the knob table (tune) read.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/costly_settings.h"
#include "probe/sysinfo.h"
#include "tune_agent/knobs.h"

namespace cp {
namespace {

bool asked(const std::string& name) {
  const std::vector<std::string>& names = probe::samba_parameters_asked();
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Tables, SambaFactsHoldEveryParameterTheCostlySettingsRead) {
  const std::vector<std::string> read = analysis::costly_samba_parameters();
  ASSERT_FALSE(read.empty());
  for (const std::string& name : read) EXPECT_TRUE(asked(name)) << name;
}

TEST(Tables, SambaFactsHoldEveryParameterTheKnobTableTunes) {
  size_t samba = 0;
  for (const tune::Knob& k : tune::knob_table()) {
    if (k.mechanism != tune::Mechanism::kSamba) continue;
    ++samba;
    EXPECT_TRUE(asked(k.param)) << k.name << ": " << k.param;
  }
  EXPECT_GT(samba, 0u);
}

}  // namespace
}  // namespace cp
