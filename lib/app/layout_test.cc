// docs/layout.md's table (which library depends on which) held to the tree:
// every cp_library in lib/ is listed, its cmake DEPS name only libraries in
// rows above its own, and no non-test source includes a header of a library
// in a row below its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/text.h"

namespace cp::app {
namespace {

namespace fs = std::filesystem;
const std::string kSource = CP_SOURCE_DIR;

// cp_NAME -> its row in docs/layout.md's table (0 = the first row).
std::map<std::string, int> readme_rows() {
  const std::optional<std::string> text = read_file(kSource + "/docs/layout.md");
  EXPECT_TRUE(text.has_value());
  std::map<std::string, int> rows;
  if (!text) return rows;
  const size_t at = text->find("\n| library | depends on |\n");
  EXPECT_NE(at, std::string::npos) << "docs/layout.md has no dependency table";
  if (at == std::string::npos) return rows;
  static const std::regex lib("`(cp_\\w+)`");
  int row = -1;
  for (std::string_view line : split(std::string_view(*text).substr(at + 1), '\n')) {
    if (!line.starts_with("|")) break;
    if (line.starts_with("| library") || line.starts_with("|---")) continue;
    ++row;
    const std::string first(split(line, '|').at(1));
    for (std::sregex_iterator it(first.begin(), first.end(), lib), e; it != e; ++it) {
      rows[(*it)[1]] = row;
    }
  }
  return rows;
}

struct Library {
  std::string dir;                // lib/DIR
  std::vector<std::string> deps;  // cp_ libraries in DEPS
};

// Every cp_library(NAME ... DEPS ...) in lib/*/CMakeLists.txt.
std::map<std::string, Library> cmake_libraries() {
  static const std::regex decl(R"(cp_library\((\w+)([^)]*)\))"), dep(R"(\b(cp_\w+))");
  std::map<std::string, Library> out;
  for (const auto& d : fs::directory_iterator(kSource + "/lib")) {
    const std::optional<std::string> text = read_file((d.path() / "CMakeLists.txt").string());
    if (!text) continue;
    for (std::sregex_iterator it(text->begin(), text->end(), decl), e; it != e; ++it) {
      Library l{d.path().filename().string(), {}};
      const std::string body = (*it)[2];
      const size_t deps_at = body.find("DEPS");
      if (deps_at != std::string::npos) {
        const std::string deps = body.substr(deps_at);
        for (std::sregex_iterator d2(deps.begin(), deps.end(), dep), e2; d2 != e2; ++d2) {
          l.deps.push_back((*d2)[1]);
        }
      }
      out["cp_" + std::string((*it)[1])] = l;
    }
  }
  return out;
}

TEST(ReadmeLayout, TableListsEveryLibraryAndOnlyThose) {
  std::set<std::string> listed, built;
  for (const auto& [name, _] : readme_rows()) listed.insert(name);
  for (const auto& [name, _] : cmake_libraries()) built.insert(name);
  EXPECT_EQ(listed, built);
}

// A folder is a library: lib/NAME/ builds cp_NAME and nothing else, so the
// tree shows what depends on what (the static agent's libraries apart from
// the orchestrator's).
TEST(ReadmeLayout, EveryFolderBuildsOneLibraryOfItsName) {
  std::map<std::string, std::vector<std::string>> by_dir;
  for (const auto& [name, lib] : cmake_libraries()) by_dir[lib.dir].push_back(name);
  ASSERT_GT(by_dir.size(), 10u);
  for (const auto& [dir, names] : by_dir) {
    EXPECT_EQ(names, std::vector<std::string>{"cp_" + dir}) << "lib/" << dir;
  }
}

TEST(ReadmeLayout, CmakeDepsPointOnlyToRowsAbove) {
  const auto rows = readme_rows();
  for (const auto& [name, lib] : cmake_libraries()) {
    if (!rows.count(name)) continue;  // reported by the test above
    for (const std::string& d : lib.deps) {
      ASSERT_TRUE(rows.count(d)) << name << " depends on " << d
                                 << ", not in docs/layout.md's table";
      EXPECT_LT(rows.at(d), rows.at(name)) << name << " depends on " << d;
    }
  }
}

TEST(ReadmeLayout, NoSourceIncludesALibraryInALowerRow) {
  const auto rows = readme_rows();
  // Per lib/ directory, the rows of the libraries built from it.
  std::map<std::string, std::pair<int, int>> dir_rows;  // min, max
  for (const auto& [name, lib] : cmake_libraries()) {
    if (!rows.count(name)) continue;
    auto [it, fresh] = dir_rows.try_emplace(lib.dir, rows.at(name), rows.at(name));
    it->second.first = std::min(it->second.first, rows.at(name));
    it->second.second = std::max(it->second.second, rows.at(name));
  }
  ASSERT_FALSE(dir_rows.empty());
  static const std::regex include(R"(#include "(\w+)/)");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kSource + "/lib")) {
    const std::string path = e.path().string();
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || (!name.ends_with(".cc") && !name.ends_with(".h"))) continue;
    // Tests, fuzz targets and test peers may reach across layers.
    if (name.find("_test") != std::string::npos || name.find("_fuzz") != std::string::npos ||
        path.find("/testing/") != std::string::npos) {
      continue;
    }
    const std::string dir = fs::relative(e.path(), kSource + "/lib").begin()->string();
    if (!dir_rows.count(dir)) continue;
    ++files;
    const std::optional<std::string> text = read_file(path);
    ASSERT_TRUE(text.has_value()) << path;
    for (std::sregex_iterator it(text->begin(), text->end(), include), end; it != end; ++it) {
      const std::string to = (*it)[1];
      if (to == dir || !dir_rows.count(to)) continue;
      EXPECT_LT(dir_rows.at(to).first, dir_rows.at(dir).second)
          << path << " includes " << to << "/, a library in a row not above lib/" << dir;
    }
  }
  EXPECT_GT(files, 50);
}

}  // namespace
}  // namespace cp::app
