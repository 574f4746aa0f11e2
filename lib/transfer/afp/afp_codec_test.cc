#include "transfer/afp/afp_codec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "core/error.h"
#include "transfer/afp/afp_uam.h"
#include "transfer/afp/dsi.h"
#include "transfer/afp/testing/afp_capture.h"
#include "transfer/testing/pcap.h"

namespace cp::transfer::afp {
namespace {

using testing::afp_capture_names;
using testing::afp_vectors_dir;
using testing::CapturedConnection;
using testing::Exchange;
using testing::hex;
using testing::load_afp_capture;

std::string vector_file(const std::string& name) {
  return testing::read_file(afp_vectors_dir() + "/" + name);
}

// Lines "  frame N  stream S  ..." of a capture's .txt: every DSI message
// tshark decoded in it.
size_t listed_messages(const std::string& pcap) {
  const std::string txt = vector_file(pcap.substr(0, pcap.size() - 5) + ".txt");
  static const std::regex line(R"(\n  frame \d+  stream \d+  )");
  return std::distance(std::sregex_iterator(txt.begin(), txt.end(), line), std::sregex_iterator());
}

// The session connection (the one that logs in) of a capture.
const CapturedConnection& session_of(const std::vector<CapturedConnection>& conns) {
  for (const auto& c : conns) {
    for (const auto& e : c.exchanges) {
      if (e.request.header.command == dsi::kOpenSession) return c;
    }
  }
  throw std::runtime_error("capture has no DSIOpenSession");
}

void expect_peer_error(const std::function<void()>& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming field '" << field << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    EXPECT_NE(std::string(e.what()).find("field '" + field + "'"), std::string::npos) << e.what();
  }
}

// Decodes a server reply as the request it answers calls for; returns what
// kind of decode ran ("" when the reply carries no structure).
std::string decode_any_reply(const Exchange& e) {
  const dsi::Message& r = *e.reply;
  switch (e.request.header.command) {
    case dsi::kGetStatus:
      decode_server_info(r.payload);
      return "status";
    case dsi::kOpenSession:
      dsi::decode_options(r.payload);
      return "options";
  }
  const int32_t code = r.header.error();
  const uint8_t cmd = e.afp_command();
  if (code == kNoErr || (code == kFPEOFErr && (cmd == kFPReadExt || cmd == kFPRead))) {
    decode_reply(cmd, r.payload);
    return command_name(cmd);
  }
  EXPECT_TRUE(r.payload.empty() || code == kFPAuthContinue)
      << command_name(cmd) << " error " << code << " with data";
  return "";
}

TEST(AfpCaptures, EveryMessageIsFramedAndDecoded) {
  std::set<int32_t> codes;
  size_t replies = 0;
  for (const auto& name : afp_capture_names()) {
    SCOPED_TRACE(name);
    const auto conns = load_afp_capture(name);
    size_t messages = 0;
    for (const auto& c : conns) {
      messages += c.from_client.size() + c.from_server.size();
      for (const auto& e : c.exchanges) {
        if (e.request.header.command == dsi::kCommand || e.request.header.command == dsi::kWrite) {
          const Request q = decode_request(e.request.payload);
          EXPECT_EQ(command_name(q.command).rfind("FP", 0), 0u) << hex(e.request.payload);
        }
        if (!e.reply) continue;
        ++replies;
        codes.insert(e.reply->header.error());
        decode_any_reply(e);
      }
      // Every server message is a reply, but the speedtest's closing DSICloseSession.
      for (const auto& m : c.server_requests) EXPECT_EQ(m.header.command, dsi::kCloseSession);
    }
    EXPECT_EQ(messages, listed_messages(name));
  }
  EXPECT_EQ(replies, 135u);  // every request but tickles and closes has its reply
  // The README's error codes all appear and decode.
  EXPECT_TRUE(codes.count(kFPAuthContinue));
  EXPECT_TRUE(codes.count(kFPEOFErr));
  EXPECT_TRUE(codes.count(kFPObjectNotFound));
}

TEST(AfpCaptures, DecodedValuesMatchTheSessionNotes) {
  const auto conns = load_afp_capture("afp_guest_tmpvol.pcap");
  ASSERT_EQ(conns.size(), 2u);
  // Stream 0: DSIGetStatus.
  const ServerInfo info = decode_server_info(conns[0].exchanges.at(0).reply->payload);
  EXPECT_EQ(info.server_name, "AFPTEST");
  EXPECT_EQ(info.utf8_server_name, "AFPTEST");
  EXPECT_EQ(info.machine_type, "Netatalk4.4.0");
  EXPECT_EQ(info.versions,
            (std::vector<std::string>{"AFP2.2", "AFPX03", "AFP3.1", "AFP3.2", "AFP3.3", "AFP3.4"}));
  EXPECT_EQ(info.uams,
            (std::vector<std::string>{"DHX2", "DHCAST128", "Cleartxt Passwrd", "No User Authent"}));
  ASSERT_EQ(info.addresses.size(), 1u);
  EXPECT_EQ(hex(info.addresses[0]), "017f000001");  // IPv4 127.0.0.1
  EXPECT_EQ(choose_version(info.versions), "AFP3.4");

  const CapturedConnection& s = session_of(conns);
  const dsi::SessionOptions mine = dsi::decode_options(s.exchanges[0].request.payload);
  EXPECT_EQ(mine.attention_quantum, 1024u);
  const dsi::SessionOptions theirs = dsi::decode_options(s.exchanges[0].reply->payload);
  EXPECT_EQ(theirs.server_quantum, 1048576u);
  EXPECT_EQ(theirs.replay_cache, 128u);

  const std::string pattern = vector_file("pattern100k.bin");
  const std::string upload = vector_file("upload64k.bin");
  std::map<std::string, int> seen;
  for (const auto& e : s.exchanges) {
    if (!e.reply) continue;
    const std::string& p = e.reply->payload;
    const int32_t code = e.reply->header.error();
    switch (e.afp_command()) {
      case kFPGetSrvrParms: {
        const SrvrParms sp = decode_srvr_parms(p);
        ASSERT_EQ(sp.volumes.size(), 2u);
        EXPECT_EQ(sp.volumes[0].name, "diskvol");
        EXPECT_EQ(sp.volumes[1].name, "tmpvol");
        break;
      }
      case kFPOpenVol: {
        const VolParams v = decode_open_vol(p);
        EXPECT_EQ(v.bitmap, 0x0927);
        EXPECT_EQ(v.volume_id, 1);
        EXPECT_EQ(v.name, "tmpvol");
        EXPECT_EQ(v.block_size, 4096u);
        break;
      }
      case kFPGetFileDirParms: {
        const Request q = decode_request(e.request.payload);
        const FileDirParms f = decode_file_dir_parms(p);
        EXPECT_FALSE(f.params.is_dir);
        if (q.name == "pattern100k.bin") {
          EXPECT_EQ(f.params.ext_data_fork_len, 102400u);
          EXPECT_EQ(f.params.unix_privs.mode, 0100644u);
        }
        break;
      }
      case kFPEnumerateExt2:
        if (code == kNoErr) {
          const EnumerateReply en = decode_enumerate_ext2(p);
          ASSERT_FALSE(en.entries.empty());
          EXPECT_EQ(en.entries.back().utf8_name, "pattern100k.bin");
          EXPECT_EQ(en.entries.back().ext_data_fork_len, 102400u);
        } else {
          EXPECT_EQ(code, kFPObjectNotFound);  // end of the listing
        }
        break;
      case kFPOpenFork:
        EXPECT_EQ(decode_open_fork(p).fork, seen["fork"]++ == 0 ? 256 : 512);
        break;
      case kFPReadExt:
        if (code == kNoErr) {
          EXPECT_EQ(p, pattern);
        } else {
          EXPECT_EQ(code, kFPEOFErr);
          EXPECT_TRUE(p.empty());
        }
        break;
      case kFPWriteExt: {
        const Request q = decode_request(e.request.payload);
        EXPECT_EQ(q.count, 65536u);
        EXPECT_EQ(e.request.header.code, 20u);  // DSIWrite data offset
        EXPECT_EQ(e.request.payload.substr(q.data_offset), upload);
        EXPECT_EQ(decode_write_ext(p), 65536u);
        break;
      }
    }
    ++seen[command_name(e.afp_command())];
  }
  EXPECT_EQ(seen["FPReadExt"], 2);
  EXPECT_EQ(seen["FPWriteExt"], 1);
  EXPECT_EQ(seen["FPGetFileDirParms"], 5);
}

TEST(AfpCaptures, SpeedtestReadsCarryTheMegabytePattern) {
  const auto conns = load_afp_capture("afp_speedtest_clrtxt_tmpvol_read1MB.pcap");
  ASSERT_EQ(conns.size(), 1u);
  std::string got;
  uint64_t next = 0;
  for (const auto& e : conns[0].exchanges) {
    if (e.afp_command() != kFPRead) continue;
    const Request q = decode_request(e.request.payload);
    EXPECT_EQ(q.offset, next);
    EXPECT_EQ(q.count, 65536u);
    next += q.count;
    got += e.reply->payload;
  }
  EXPECT_EQ(got, vector_file("pattern1m.bin"));
  ASSERT_EQ(conns[0].server_requests.size(), 1u);
  EXPECT_EQ(conns[0].server_requests[0].header.command, dsi::kCloseSession);
}

// Our encoding of a captured client message, from its decoded fields.
std::string reencode(const dsi::Message& m) {
  dsi::Header h = m.header;
  switch (h.command) {
    case dsi::kGetStatus:
    case dsi::kCloseSession:
    case dsi::kTickle:
      return dsi::encode_message(h, "");
    case dsi::kOpenSession: {
      dsi::SessionOptions o;
      o.attention_quantum = dsi::decode_options(m.payload).attention_quantum;
      return dsi::encode_message(h, dsi::encode_options(o));
    }
  }
  const Request q = decode_request(m.payload);
  std::string afp;
  switch (q.command) {
    case kFPLogin: {
      Reader r(q.auth, "auth");
      if (q.uam == kUamGuest) {
        afp = encode_login(q.version, q.uam, nullptr, {});
        break;
      }
      const std::string user = r.pascal("user");
      if ((q.auth_offset + r.pos()) % 2 && r.remaining()) r.skip(1, "pad");
      afp = encode_login(q.version, q.uam, &user, r.rest());
      break;
    }
    case kFPLoginCont:
      afp = encode_login_cont(q.auth);
      break;
    case kFPGetSrvrParms:
      afp = encode_get_srvr_parms();
      break;
    case kFPGetSrvrMsg:
      afp = encode_get_srvr_msg(q.msg_type, q.bitmap);
      break;
    case kFPOpenVol:
      afp = encode_open_vol(q.bitmap, q.name);
      break;
    case kFPCloseVol:
      afp = encode_close_vol(q.volume);
      break;
    case kFPEnumerateExt2:
      afp = encode_enumerate_ext2(q.volume, q.dir, q.file_bitmap, q.dir_bitmap, q.req_count,
                                  q.start_index, q.max_reply, q.name);
      break;
    case kFPGetFileDirParms:
      afp = encode_get_file_dir_parms(q.volume, q.dir, q.file_bitmap, q.dir_bitmap, q.name);
      break;
    case kFPSetFileDirParms: {
      // The parameters round-trip through our parameter codec too.
      Reader r(q.params, "params");
      Writer w;
      encode_params(w, q.bitmap, decode_params(r, q.bitmap, false));
      EXPECT_EQ(hex(w.str()), hex(q.params.substr(0, w.size())));
      afp = encode_set_file_dir_parms(q.volume, q.dir, q.bitmap, q.name, q.params);
      break;
    }
    case kFPCreateFile:
      afp = encode_create_file(q.volume, q.dir, q.flag & 0x80, q.name);
      break;
    case kFPDelete:
      afp = encode_delete(q.volume, q.dir, q.name);
      break;
    case kFPOpenFork:
      afp = encode_open_fork(q.volume, q.dir, q.bitmap, q.access, q.name, q.flag & 0x80);
      break;
    case kFPReadExt:
      afp = encode_read_ext(q.fork, q.offset, q.count);
      break;
    case kFPRead:
      afp = encode_read(static_cast<uint16_t>(q.fork), static_cast<uint32_t>(q.offset),
                        static_cast<uint32_t>(q.count));
      break;
    case kFPWriteExt:
      afp = encode_write_ext_header(q.fork, q.offset, q.count) + m.payload.substr(q.data_offset);
      break;
    case kFPFlushFork:
      afp = encode_flush_fork(q.fork);
      break;
    case kFPCloseFork:
      afp = encode_close_fork(q.fork);
      break;
    case kFPFlush:
      afp = encode_flush(q.volume);
      break;
    case kFPLogout:
      afp = encode_logout();
      break;
    default:
      ADD_FAILURE() << "no encoder for " << command_name(q.command);
  }
  return dsi::encode_message(h, afp);
}

TEST(AfpCaptures, ClientRequestsReencodeToTheSameBytes) {
  size_t compared = 0;
  std::set<std::string> commands;
  for (const auto& name : afp_capture_names()) {
    SCOPED_TRACE(name);
    const bool speedtest = name.find("speedtest") != std::string::npos;
    for (const auto& c : load_afp_capture(name)) {
      for (const auto& m : c.from_client) {
        const std::string want = dsi::encode_message(m.header, m.payload);
        const std::string got = reencode(m);
        const uint8_t cmd = m.payload.empty() ? 0 : static_cast<uint8_t>(m.payload[0]);
        if (speedtest && m.header.command == dsi::kCommand && cmd == kFPLogout) {
          // netatalk's testsuite sends FPLogout without the pad byte we send.
          EXPECT_EQ(hex(want.substr(16)), "14");
          EXPECT_EQ(hex(got.substr(16)), "1400");
          continue;
        }
        if (speedtest && m.header.command == dsi::kCommand && cmd == kFPOpenVol) {
          // ... and pads FPOpenVol's volume name to an even length; we do not.
          ASSERT_EQ(want.back(), '\0');
          EXPECT_EQ(hex(got.substr(16)), hex(want.substr(16, want.size() - 17)));
          continue;
        }
        EXPECT_EQ(hex(got), hex(want)) << dsi::command_name(m.header.command);
        ++compared;
        commands.insert(m.header.command == dsi::kCommand || m.header.command == dsi::kWrite
                            ? command_name(cmd)
                            : dsi::command_name(m.header.command));
      }
    }
  }
  EXPECT_EQ(compared, 134u);  // every client message but the two noted above
  for (const char* c :
       {"FPLogin", "FPLoginCont", "FPOpenVol", "FPGetFileDirParms", "FPOpenFork", "FPReadExt",
        "FPWriteExt", "FPCloseFork", "FPCreateFile", "FPCloseVol", "FPLogout", "FPRead",
        "DSIOpenSession", "DSIGetStatus", "DSICloseSession"}) {
    EXPECT_TRUE(commands.count(c)) << c;
  }
}

TEST(AfpCaptures, ServerRepliesReencodeToTheSameBytes) {
  // Our reply encoders (the test peer's) against netatalk's bytes.
  size_t compared = 0;
  for (const auto& name : afp_capture_names()) {
    SCOPED_TRACE(name);
    for (const auto& c : load_afp_capture(name)) {
      for (const auto& e : c.exchanges) {
        if (!e.reply || e.reply->header.error() != kNoErr) continue;
        const std::string& p = e.reply->payload;
        std::string ours;
        switch (e.afp_command()) {
          case kFPGetSrvrParms:
            ours = encode_srvr_parms(decode_srvr_parms(p));
            break;
          case kFPOpenVol:
            ours = encode_vol_params(decode_open_vol(p));
            break;
          case kFPGetFileDirParms: {
            const FileDirParms f = decode_file_dir_parms(p);
            ours = encode_file_dir_parms(f.file_bitmap, f.dir_bitmap, f.params);
            break;
          }
          case kFPOpenFork: {
            const OpenForkReply o = decode_open_fork(p);
            ours = encode_open_fork_reply(o.bitmap, o.fork, o.params);
            break;
          }
          default:
            continue;
        }
        EXPECT_EQ(hex(ours), hex(p)) << command_name(e.afp_command());
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 39u);
}

TEST(AfpCaptures, TruncatedOrCorruptedRepliesFailCleanly) {
  // Every prefix of every small reply, and seeded byte flips: a decoder may
  // accept or throw Error(kPeer), never crash or throw anything else.
  std::mt19937 rng(548);
  size_t errors = 0;
  for (const auto& name : afp_capture_names()) {
    for (const auto& c : load_afp_capture(name)) {
      for (const auto& e : c.exchanges) {
        if (!e.reply || e.reply->payload.size() > 2048) continue;
        const Exchange& ex = e;
        auto attempt = [&](const std::string& bytes) {
          Exchange t = ex;
          t.reply->payload = bytes;
          t.reply->header.code = 0;
          try {
            decode_any_reply(t);
          } catch (const Error& err) {
            EXPECT_EQ(err.kind(), ErrorKind::kPeer);
            ++errors;
          }
        };
        const std::string& p = e.reply->payload;
        for (size_t n = 0; n < p.size(); ++n) attempt(p.substr(0, n));
        for (int i = 0; i < 20 && !p.empty(); ++i) {
          std::string b = p;
          b[rng() % b.size()] = static_cast<char>(rng());
          attempt(b);
        }
      }
    }
  }
  EXPECT_GT(errors, 100u);
}

TEST(AfpCodec, MalformedRepliesNameTheField) {
  expect_peer_error([] { decode_open_vol(std::string("\x09", 1)); }, "bitmap");
  expect_peer_error([] { decode_open_vol(std::string("\x01\x00", 2)); }, "volume name offset");
  expect_peer_error([] { decode_open_vol(std::string("\x10\x00\x00\x00", 4)); }, "bitmap");
  expect_peer_error(
      [] {
        decode_srvr_parms(
            std::string("\0\0\0\0\x02\x00\x03"
                        "abc",
                        10));
      },
      "volume flags");
  expect_peer_error([] { decode_server_info(std::string(10, '\0')); }, "server name");
  // Machine type offset past the end.
  expect_peer_error([] { decode_server_info(std::string("\xff\x00\0\0\0\0\0\0\0\0\x01x", 12)); },
                    "machine type");
  // A directory with a file-only bit (14).
  expect_peer_error([] { decode_file_dir_parms(std::string("\x00\x00\x40\x00\x80\x00", 6)); },
                    "bitmap");
  expect_peer_error([] { decode_open_fork(std::string("\x00\x00\x00\x00", 4)); }, "fork reference");
  expect_peer_error([] { decode_write_ext("1234"); }, "last written");
  expect_peer_error([] { decode_enumerate_ext2(std::string("\0\0\0\0\0\x01\0\x02", 8)); },
                    "entry length");
  expect_peer_error([] { decode_reply(kFPCloseFork, "x"); }, "reply");
  expect_peer_error([] { decode_request(std::string("\x3c\x00\x01", 3)); }, "fork");
  expect_peer_error([] { decode_attention("x"); }, "attention code");
}

TEST(AfpCodec, ParamsRoundTripWithNames) {
  Params p;
  p.is_dir = false;
  p.attributes = 0x0100;
  p.parent_id = 2;
  p.long_name = "long";
  p.short_name = "SHORT";
  p.utf8_name = "ütf-8 name";
  p.node_id = 77;
  p.ext_data_fork_len = 5000000000ull;
  p.unix_privs = {1, 2, 0100600, 3};
  const uint16_t bitmap = kAttributes | kParentDirID | kLongName | kShortName | kNodeID |
                          kExtDataForkLen | kUTF8Name | kUnixPrivs;
  const std::string reply = encode_file_dir_parms(bitmap, 0, p);
  const FileDirParms f = decode_file_dir_parms(reply);
  EXPECT_EQ(f.params.long_name, "long");
  EXPECT_EQ(f.params.short_name, "SHORT");
  EXPECT_EQ(f.params.utf8_name, "ütf-8 name");
  EXPECT_EQ(f.params.ext_data_fork_len, 5000000000ull);
  EXPECT_EQ(f.params.unix_privs.mode, 0100600u);
  EXPECT_EQ(f.params.node_id, 77u);
  Params d;
  d.is_dir = true;
  d.offspring_count = 3;
  d.node_id = 9;
  const FileDirParms g =
      decode_file_dir_parms(encode_file_dir_parms(0, kNodeID | kOffspringCount, d));
  EXPECT_TRUE(g.params.is_dir);
  EXPECT_EQ(g.params.offspring_count, 3);
  EXPECT_EQ(g.params.node_id, 9u);
}

TEST(AfpCodec, ServerInfoRoundTrips) {
  ServerInfo info;
  info.machine_type = "Netatalk4.4.0";
  info.versions = {"AFP3.3", "AFP3.4"};
  info.uams = {"DHX2"};
  info.flags = 0x8f79;
  info.server_name = "odd";  // odd length: the offsets block needs a pad
  info.utf8_server_name = "odd-ütf8";
  info.addresses = {std::string("\x01\x7f\x00\x00\x01", 5)};
  const ServerInfo back = decode_server_info(encode_server_info(info));
  EXPECT_EQ(back.machine_type, info.machine_type);
  EXPECT_EQ(back.versions, info.versions);
  EXPECT_EQ(back.uams, info.uams);
  EXPECT_EQ(back.server_name, "odd");
  EXPECT_EQ(back.utf8_server_name, "odd-ütf8");
  EXPECT_EQ(back.addresses, info.addresses);
}

TEST(AfpCodec, VersionsPathsAndNames) {
  EXPECT_EQ(choose_version({"AFP2.2", "AFPX03", "AFP3.1"}), "AFP3.1");
  EXPECT_EQ(choose_version({"AFPX03"}), "AFPX03");
  EXPECT_FALSE(choose_version({"AFP2.2", "AFPVersion 2.1"}));
  EXPECT_EQ(to_afp_path("run-1/a.dat"), std::string("run-1\0a.dat", 11));
  EXPECT_EQ(to_afp_path(""), "");
  EXPECT_EQ(result_name(-5018), "kFPObjectNotFound (-5018)");
  EXPECT_EQ(result_name(-5008), "kFPDiskFull (-5008)");
  EXPECT_EQ(result_name(-1), "AFP error -1");
  EXPECT_EQ(command_name(kFPReadExt), "FPReadExt");
  EXPECT_EQ(command_name(200), "AFP command 200");
  EXPECT_THROW(encode_open_vol(0, std::string(256, 'v')), Error);
  const Attention a = decode_attention(std::string("\x80\x05", 2));
  EXPECT_TRUE(a.shutdown);
  EXPECT_FALSE(a.crashed);
  EXPECT_EQ(a.minutes, 5);
}

// FPCreateDir (no capture holds one): command 6, a pad, the volume and
// directory IDs, then the path as FPDelete's; its reply the new directory's
// ID, and anything but 4 bytes refused.
TEST(AfpCodec, CreateDirEncodesLikeDeleteAndItsReplyIsTheNewDirectoryId) {
  const std::string path = to_afp_path("runs/d0001");
  const std::string q = encode_create_dir(7, kRootDirID, path);
  const std::string del = encode_delete(7, kRootDirID, path);
  ASSERT_EQ(q.size(), del.size());
  EXPECT_EQ(uint8_t(q[0]), kFPCreateDir);
  EXPECT_EQ(q.substr(1), del.substr(1));
  const Request r = decode_request(q);
  EXPECT_EQ(r.command, kFPCreateDir);
  EXPECT_EQ(r.volume, 7);
  EXPECT_EQ(r.dir, kRootDirID);
  EXPECT_EQ(r.name, decode_request(del).name);
  EXPECT_EQ(command_name(kFPCreateDir), "FPCreateDir");
  EXPECT_EQ(decode_create_dir(std::string("\x00\x00\x01\x02", 4)), 0x102u);
  EXPECT_THROW(decode_reply(kFPCreateDir, std::string("\x00\x01", 2)), Error);
}

}  // namespace
}  // namespace cp::transfer::afp
