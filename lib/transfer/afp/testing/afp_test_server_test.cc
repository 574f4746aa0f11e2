#include "transfer/afp/testing/afp_test_server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "transfer/afp/afp_codec.h"
#include "transfer/afp/dsi.h"
#include "transfer/afp/testing/afp_capture.h"
#include "transfer/testing/pcap.h"

namespace cp::transfer::testing {
namespace {

namespace fs = std::filesystem;
using namespace cp::transfer::afp;  // NOLINT

// The fields of a reply the test server gives as netatalk did (its other
// fields hold dates, IDs and owners, which differ).
auto compared(const ServerInfo& i) {
  return std::tie(i.server_name, i.utf8_server_name, i.machine_type, i.versions, i.uams, i.flags,
                  i.addresses);
}
auto compared(const VolParams& v) {
  return std::tie(v.bitmap, v.attributes, v.signature, v.volume_id, v.name, v.block_size);
}

// Plays the guest capture's client requests to the test server (serving a
// copy of the captured files) and holds its replies against netatalk's.
TEST(AfpTestServer, RepliesLikeTheCapturedServer) {
  const fs::path root = fs::temp_directory_path() / ("afp-srv-" + std::to_string(::getpid()));
  fs::create_directories(root / "tmpvol");
  fs::create_directories(root / "diskvol");
  const std::string pattern = read_file(afp_vectors_dir() + "/pattern100k.bin");
  std::ofstream(root / "tmpvol" / "pattern100k.bin", std::ios::binary) << pattern;
  fs::permissions(root / "tmpvol" / "pattern100k.bin", fs::perms(0644));
  TestServerConfig cfg;
  // netatalk's IDs in the captures: tmpvol 1, diskvol 2.
  cfg.volumes = {{"tmpvol", (root / "tmpvol").string()}, {"diskvol", (root / "diskvol").string()}};
  AfpTestServer server(cfg);
  const auto captured = load_afp_capture("afp_guest_tmpvol.pcap");
  CancelToken cancel;

  {
    auto c = dsi::Connection::connect("127.0.0.1", server.port(), &cancel);
    const ServerInfo ours = decode_server_info(c->get_status());
    const ServerInfo theirs = decode_server_info(captured[0].exchanges[0].reply->payload);
    EXPECT_EQ(compared(ours), compared(theirs));
  }

  auto c = dsi::Connection::connect("127.0.0.1", server.port(), &cancel);
  size_t exact = 0, fields = 0;
  std::set<std::string> not_served;
  for (const Exchange& e : captured[1].exchanges) {
    const dsi::Header& h = e.request.header;
    if (h.command == dsi::kOpenSession) {
      dsi::SessionOptions o = c->open_session(1024);
      EXPECT_EQ(hex(dsi::encode_options(o)), hex(e.reply->payload));
      ++exact;
      continue;
    }
    ASSERT_TRUE(h.command == dsi::kCommand || h.command == dsi::kWrite);
    const uint8_t cmd = e.afp_command();
    dsi::Message m;
    if (h.command == dsi::kWrite) {
      m = c->wait(
          c->send_write(e.request.payload.substr(0, h.code), e.request.payload.substr(h.code)));
    } else {
      m = c->call(e.request.payload);
    }
    if (cmd == kFPEnumerateExt2 || cmd == kFPSetFileDirParms) {
      EXPECT_EQ(m.header.error(), kFPCallNotSupported);
      not_served.insert(command_name(cmd));
      continue;
    }
    SCOPED_TRACE(command_name(cmd));
    EXPECT_EQ(m.header.error(), e.reply->header.error());
    const std::string& want = e.reply->payload;
    switch (cmd) {
      case kFPGetSrvrParms: {
        const SrvrParms a = decode_srvr_parms(m.payload), b = decode_srvr_parms(want);
        ASSERT_EQ(a.volumes.size(), b.volumes.size());
        for (size_t i = 0; i < a.volumes.size(); ++i) {
          EXPECT_EQ(a.volumes[i].name, b.volumes[i].name);
          EXPECT_EQ(a.volumes[i].flags, b.volumes[i].flags);
        }
        ++fields;  // the server time differs
        break;
      }
      case kFPOpenVol: {
        const VolParams a = decode_open_vol(m.payload), b = decode_open_vol(want);
        EXPECT_EQ(compared(a), compared(b));
        EXPECT_EQ(m.payload.size(), want.size());
        ++fields;  // the creation date differs
        break;
      }
      case kFPGetFileDirParms: {
        const FileDirParms a = decode_file_dir_parms(m.payload), b = decode_file_dir_parms(want);
        EXPECT_EQ(a.file_bitmap, b.file_bitmap);
        EXPECT_EQ(a.dir_bitmap, b.dir_bitmap);
        EXPECT_EQ(a.params.is_dir, b.params.is_dir);
        EXPECT_EQ(m.payload.size(), want.size());
        if (a.file_bitmap & kExtDataForkLen) {
          EXPECT_EQ(a.params.ext_data_fork_len, b.params.ext_data_fork_len);
          EXPECT_EQ(a.params.parent_id, b.params.parent_id);
          EXPECT_EQ(a.params.unix_privs.mode, b.params.unix_privs.mode);
        }
        ++fields;  // dates, IDs and owners differ
        break;
      }
      default:
        // Logins, messages, forks, reads (data and EOF), writes, flush, logout.
        EXPECT_EQ(hex(m.payload.substr(0, 64)), hex(want.substr(0, 64)));
        EXPECT_TRUE(m.payload == want);
        ++exact;
    }
  }
  c->close_session();
  EXPECT_EQ(exact, 13u);
  EXPECT_EQ(fields, 7u);
  EXPECT_EQ(not_served, (std::set<std::string>{"FPEnumerateExt2", "FPSetFileDirParms"}));
  EXPECT_EQ(read_file((root / "tmpvol" / "guest_upload64k.bin").string()),
            read_file(afp_vectors_dir() + "/upload64k.bin"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace cp::transfer::testing
