// Unit tests of the lab's NFS-Ganesha config and shares (lab_test.cc and
// drivers_lab_test.cc run the real server).
#include "lab/ganesha.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "lab/layout.h"

namespace cp::lab::ganesha {
namespace {

// The config's blocks in order, each as its "Key = value" pairs (the inner
// FSAL block's lines land in its export's map).
std::vector<std::pair<std::string, std::map<std::string, std::string>>> blocks(
    const std::string& text) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  std::istringstream in(text);
  std::string line;
  int depth = 0;
  auto trim = [](std::string v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '"')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == ';' || v.back() == '"')) v.pop_back();
    return v;
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t open = line.find('{');
    if (open != std::string::npos && depth == 0) {
      out.push_back({trim(line.substr(0, open)), {}});
      const std::string rest = line.substr(open + 1);
      const size_t eq = rest.find('=');
      if (eq != std::string::npos) {
        out.back().second[trim(rest.substr(0, eq))] =
            trim(rest.substr(eq + 1, rest.find('}') - eq - 1));
      }
      if (line.find('}') == std::string::npos) depth = 1;
      continue;
    }
    if (line == "}") {
      depth = 0;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq != std::string::npos && !out.empty()) {
      std::string value = line.substr(eq + 1);
      if (const size_t close = value.find('}'); close != std::string::npos) value.erase(close);
      out.back().second[trim(line.substr(0, eq))] = trim(value);
    }
  }
  return out;
}

TEST(GaneshaConf, ServesTheThreeSharesOnTheDataAddressOnly) {
  const LabState s = plan(LabOptions{}, "/srv/lab");
  const ServerFiles f = server_files(s);
  const auto b = blocks(conf_text(s, /*v3=*/false, "/usr/lib/ganesha"));
  ASSERT_GE(b.size(), 4u);
  EXPECT_EQ(b[0].first, "NFS_CORE_PARAM");
  EXPECT_EQ(b[0].second.at("Bind_addr"), s.server.data_address);
  EXPECT_EQ(b[0].second.at("Protocols"), "4");
  EXPECT_EQ(b[0].second.at("Enable_UDP"), "false");
  EXPECT_EQ(b[0].second.at("Enable_NLM"), "false");
  EXPECT_EQ(b[0].second.at("Plugins_Dir"), "/usr/lib/ganesha");
  std::map<std::string, std::map<std::string, std::string>> exports;
  for (const auto& [name, kv] : b) {
    if (name == "EXPORT") exports[kv.at("Pseudo")] = kv;
    if (name == "NFSV4") EXPECT_EQ(kv.at("Graceless"), "true");
  }
  ASSERT_EQ(exports.size(), 3u);
  EXPECT_EQ(exports["/ram"].at("Path"), f.ram_share);
  EXPECT_EQ(exports["/ram"].at("Access_Type"), "RW");
  EXPECT_EQ(exports["/disk"].at("Path"), f.disk_share);
  EXPECT_EQ(exports["/ro"].at("Path"), f.ro_share);
  EXPECT_EQ(exports["/ro"].at("Access_Type"), "RO");
  for (const auto& [pseudo, kv] : exports) {
    EXPECT_EQ(kv.at("Transports"), "TCP") << pseudo;
    EXPECT_EQ(kv.at("Squash"), "Root_Squash") << pseudo;
  }
}

TEST(GaneshaConf, NfsV3OnlyWithRpcbind) {
  const LabState s = plan(LabOptions{}, "/srv/lab");
  const auto b = blocks(conf_text(s, /*v3=*/true, "/usr/lib/ganesha"));
  EXPECT_EQ(b[0].second.at("Protocols"), "3, 4");
  EXPECT_EQ(b[0].second.at("Mount_Path_Pseudo"), "true");
}

// `lab up --ganesha` lines land in every export (MaxRead/MaxWrite are
// per-export parameters), and nowhere without them.
TEST(GaneshaConf, ExtraParametersGoIntoEachExport) {
  LabOptions o;
  o.ganesha_params = {"MaxWrite = 65536", "MaxRead = 131072"};
  EXPECT_NO_THROW(validate(o));
  int exports = 0;
  for (const auto& [name, kv] : blocks(conf_text(plan(o, "/srv/lab"), false, "/p"))) {
    if (name != "EXPORT") continue;
    ++exports;
    EXPECT_EQ(kv.at("MaxWrite"), "65536") << kv.at("Pseudo");
    EXPECT_EQ(kv.at("MaxRead"), "131072") << kv.at("Pseudo");
  }
  EXPECT_EQ(exports, 3);
  for (const auto& [name, kv] : blocks(conf_text(plan(LabOptions{}, "/srv/lab"), false, "/p"))) {
    EXPECT_EQ(kv.count("MaxWrite"), 0u) << name;
  }
  for (const char* bad : {"MaxWrite", "MaxWrite = 1; } EXPORT {", "Max Write = 1", "a = 1 # c",
                          "a = 1\nb = 2", "= 1"}) {
    try {
      validate_ganesha_param(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig) << bad;
    }
  }
}

TEST(GaneshaShares, PlanHasNfsRamAndDiskOnceAndOldLabsGetThem) {
  LabState s = plan(LabOptions{}, "/srv/lab");
  EXPECT_TRUE(serves_nfs(s));
  add_shares(s);  // idempotent
  int nfs = 0;
  for (const LabShare& sh : s.server.shares) nfs += sh.protocol == "nfs";
  EXPECT_EQ(nfs, 2);
  // A lab.json from before NFS: start() adds the shares.
  std::erase_if(s.server.shares, [](const LabShare& sh) { return sh.protocol == "nfs"; });
  EXPECT_FALSE(serves_nfs(s));
  add_shares(s);
  EXPECT_TRUE(serves_nfs(s));
  EXPECT_EQ(s.server.shares.back().url, "nfs://" + s.server.data_address + "/disk");
}

}  // namespace
}  // namespace cp::lab::ganesha
