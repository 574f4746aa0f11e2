#include "transfer/afp/afp_uam.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/dsi.h"
#include "transfer/afp/testing/afp_capture.h"

namespace cp::transfer::afp {
namespace {

using testing::hex;
using testing::load_afp_capture;

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string zero_padded_for_test(std::string s, size_t n) {
  s.resize(n, '\0');
  return s;
}

// Deterministic "random" bytes for tests: 0x01 0x02 ...
std::string counting(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i + 1);
  return s;
}

// The login exchanges (FPLogin and FPLoginCont) of a capture's session.
std::vector<testing::Exchange> logins(const std::string& capture) {
  std::vector<testing::Exchange> out;
  for (const auto& c : load_afp_capture(capture)) {
    for (const auto& e : c.exchanges) {
      if (e.afp_command() == kFPLogin || e.afp_command() == kFPLoginCont) out.push_back(e);
    }
  }
  return out;
}

TEST(AfpCrypto, Cast5MatchesRfc2144) {
  // RFC 2144 appendix B.1, 128-bit key: one block, so CBC with a zero IV is ECB.
  const std::string key = unhex("0123456712345678234567893456789A");
  const std::string plain = unhex("0123456789ABCDEF");
  const std::string zero(8, '\0');
  EXPECT_EQ(hex(crypto::cast5_cbc(true, key, zero, plain)), "238b4fe5847e44b2");
  EXPECT_EQ(crypto::cast5_cbc(false, key, zero, unhex("238b4fe5847e44b2")), plain);
  // CBC chains: the second block depends on the first.
  const std::string two = crypto::cast5_cbc(true, key, kClientToServerIV, plain + plain);
  EXPECT_NE(two.substr(0, 8), two.substr(8, 8));
  EXPECT_EQ(crypto::cast5_cbc(false, key, kClientToServerIV, two), plain + plain);
}

TEST(AfpCrypto, Md5ModExpAndCounters) {
  EXPECT_EQ(hex(crypto::md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  // 7^3 mod 11 = 2, padded to 4 bytes.
  EXPECT_EQ(hex(crypto::mod_exp("\x07", "\x03", "\x0b", 4)), "00000002");
  EXPECT_EQ(hex(crypto::increment(unhex("00ff"))), "0100");
  EXPECT_EQ(hex(crypto::increment(unhex("ffff"))), "0000");
  EXPECT_EQ(crypto::compare(unhex("0001"), unhex("01")), 0);
  EXPECT_EQ(crypto::compare(unhex("02"), unhex("0100")), -1);
  EXPECT_EQ(crypto::compare(unhex("ff"), unhex("fe")), 1);
  EXPECT_TRUE(crypto::is_probable_prime(dhcast128_prime()));
  EXPECT_FALSE(crypto::is_probable_prime(unhex("0f")));
}

TEST(AfpUam, NamesAndChoice) {
  // A name as a user may give it, and the UAM it names.
  const std::pair<const char*, const char*> names[] = {
      {"dhx2", "DHX2"},
      {"DHCAST128", "DHCAST128"},
      {"dhx", "DHCAST128"},
      {"cleartxt passwrd", "Cleartxt Passwrd"},
      {"clrtxt", "Cleartxt Passwrd"},
      {"No User Authent", "No User Authent"},
      {"guest", "No User Authent"},
  };
  for (const auto& [given, uam] : names) EXPECT_EQ(canonical_uam(given), uam) << given;
  EXPECT_THROW(canonical_uam("Kerberos"), Error);

  const std::vector<std::string> all = {"DHX2", "DHCAST128", "Cleartxt Passwrd", "No User Authent"};
  EXPECT_EQ(choose_uam(all, "", true, "s"), "DHX2");
  EXPECT_EQ(choose_uam({"Cleartxt Passwrd", "DHCAST128"}, "", true, "s"), "DHCAST128");
  EXPECT_EQ(choose_uam(all, "", false, "s"), "No User Authent");
  EXPECT_EQ(choose_uam(all, "Cleartxt Passwrd", true, "s"), "Cleartxt Passwrd");
  EXPECT_EQ(choose_uam(all, "No User Authent", true, "s"), "No User Authent");
  try {
    choose_uam({"DHX2", "Cleartxt Passwrd"}, "DHCAST128", true, "nas:548");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("nas:548 does not offer the UAM 'DHCAST128'"),
              std::string::npos);
    EXPECT_NE(e.hint().find("DHX2, Cleartxt Passwrd"), std::string::npos);
  }
  EXPECT_THROW(choose_uam({"DHX2"}, "", false, "s"), Error);      // no guest, no user
  EXPECT_THROW(choose_uam({"DHX2"}, "DHX2", false, "s"), Error);  // DHX2 needs a user
  EXPECT_THROW(choose_uam({"No User Authent", "Kerberos"}, "", true, "s"), Error);
}

// Cleartxt Passwrd sends the password as it is: never picked by itself, even
// when it is the only password UAM a server offers; named, it is used.
TEST(SecurityAfpUam, CleartextIsUsedOnlyWhenNamed) {
  const std::vector<std::string> clear_only = {"Cleartxt Passwrd", "No User Authent"};
  try {
    choose_uam(clear_only, "", true, "nas:548");
    ADD_FAILURE() << "Cleartxt Passwrd was chosen without being named";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(e.hint().find("uam=cleartxt"), std::string::npos);  // the option that allows it
  }
  EXPECT_EQ(choose_uam(clear_only, "Cleartxt Passwrd", true, "s"), "Cleartxt Passwrd");
  EXPECT_EQ(choose_uam(clear_only, "", false, "s"), "No User Authent");
  EXPECT_EQ(canonical_uam("cleartxt"), "Cleartxt Passwrd");
}

TEST(AfpUam, GuestAndCleartextLoginsAreTheCapturedBytes) {
  const auto guest = logins("afp_guest_tmpvol.pcap");
  ASSERT_EQ(guest.size(), 1u);
  EXPECT_EQ(hex(make_uam(kUamGuest, "", "")->login("AFP3.4")), hex(guest[0].request.payload));
  EXPECT_EQ(guest[0].reply->header.error(), kNoErr);

  const auto clear = logins("afp_clrtxt_afpuser_diskvol.pcap");
  ASSERT_EQ(clear.size(), 1u);
  EXPECT_EQ(hex(make_uam(kUamCleartext, "afpuser", "afppass")->login("AFP3.4")),
            hex(clear[0].request.payload));
  // The speedtest client (netatalk's own) sends the very same bytes.
  const auto speed = logins("afp_speedtest_clrtxt_tmpvol_read1MB.pcap");
  EXPECT_EQ(hex(make_uam(kUamCleartext, "afpuser", "afppass")->login("AFP3.4")),
            hex(speed.at(0).request.payload));
}

TEST(AfpUam, PasswordLimits) {
  EXPECT_THROW(make_uam(kUamCleartext, "u", "123456789"), Error);
  EXPECT_NO_THROW(make_uam(kUamCleartext, "u", "12345678"));
  EXPECT_THROW(make_uam(kUamDhcast128, "u", std::string(65, 'p')), Error);
  EXPECT_THROW(make_uam(kUamDhx2, "u", std::string(256, 'p')), Error);
  EXPECT_NO_THROW(make_uam(kUamDhx2, "u", std::string(255, 'p')));
  EXPECT_THROW(make_uam(kUamDhx2, "", "p"), Error);
}

TEST(AfpUam, Dhx2MatchesTheCapturedStructure) {
  const auto l = logins("afp_dhx2_afpuser_diskvol.pcap");
  ASSERT_EQ(l.size(), 3u);  // FPLogin, FPLoginCont x2
  auto uam = make_uam(kUamDhx2, "afpuser", "afppass", counting);
  // FPLogin carries no randomness: the very same bytes.
  EXPECT_EQ(hex(uam->login("AFP3.4")), hex(l[0].request.payload));

  // The server's challenge: id, g, len, p (a 1024-bit prime), its public key.
  ASSERT_EQ(l[0].reply->header.error(), kFPAuthContinue);
  const std::string& challenge = l[0].reply->payload;
  Reader r(challenge, "challenge");
  const uint16_t id = r.u16("id");
  const uint32_t g = r.u32("g");
  const uint16_t len = r.u16("len");
  EXPECT_EQ(len, 128);
  const std::string p(r.bytes(len, "p"));
  const std::string mb(r.bytes(len, "mb"));
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_GE(g, 2u);
  EXPECT_TRUE(static_cast<uint8_t>(p[0]) & 0x80);  // full 1024 bits
  EXPECT_TRUE(crypto::is_probable_prime(p));
  EXPECT_LT(crypto::compare(mb, p), 0);

  // Our answer has the captured client's layout: id, Ma (len bytes), a
  // sealed 16-byte nonce.
  const std::string cont1 = uam->next(challenge);
  ASSERT_EQ(cont1.size(), l[1].request.payload.size());
  EXPECT_EQ(cont1.size(), 2u + 2 + 128 + 16);
  EXPECT_EQ(hex(cont1.substr(0, 4)), hex(l[1].request.payload.substr(0, 4)));  // cmd, pad, id
  EXPECT_EQ(Reader(cont1.substr(2), "c").u16("id"), id);

  // The server's proof: id + 1, two sealed nonces; its final answer: id + 1
  // and 272 sealed bytes (server nonce + 1, the 256-byte password field).
  EXPECT_EQ(l[1].reply->header.error(), kFPAuthContinue);
  EXPECT_EQ(l[1].reply->payload.size(), 34u);
  EXPECT_EQ(Reader(l[1].reply->payload, "r").u16("id"), uint16_t(id + 1));
  EXPECT_EQ(l[2].request.payload.size(), 2u + 2 + 16 + 256);
  EXPECT_EQ(l[2].reply->header.error(), kNoErr);
  // The captured proof was sealed with the captured client's key, not ours.
  try {
    uam->next(l[1].reply->payload);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    EXPECT_NE(std::string(e.what()).find("DHX2 key check"), std::string::npos);
  }
}

TEST(AfpUam, Dhcast128MatchesTheCapturedStructure) {
  const auto l = logins("afp_dhx_afpuser_tmpvol.pcap");
  ASSERT_EQ(l.size(), 2u);  // FPLogin, FPLoginCont
  auto uam = make_uam(kUamDhcast128, "afpuser", "afppass", counting);
  const std::string login = uam->login("AFP3.4");
  ASSERT_EQ(login.size(), l[0].request.payload.size());
  // Same up to Ma, the client's random public key (16 bytes).
  EXPECT_EQ(hex(login.substr(0, login.size() - 16)),
            hex(l[0].request.payload.substr(0, login.size() - 16)));
  EXPECT_LT(crypto::compare(login.substr(login.size() - 16), dhcast128_prime()), 0);
  // Challenge: id, Mb, 32 sealed bytes (nonce, signature).
  ASSERT_EQ(l[0].reply->header.error(), kFPAuthContinue);
  const std::string& challenge = l[0].reply->payload;
  ASSERT_EQ(challenge.size(), 50u);
  EXPECT_LT(crypto::compare(challenge.substr(2, 16), dhcast128_prime()), 0);
  const std::string cont = uam->next(challenge);
  ASSERT_EQ(cont.size(), l[1].request.payload.size());
  EXPECT_EQ(cont.size(), 2u + 2 + 16 + 64);
  EXPECT_EQ(hex(cont.substr(0, 4)), hex(l[1].request.payload.substr(0, 4)));
  EXPECT_EQ(l[1].reply->header.error(), kNoErr);
}

// Plays the server side of DHX2 with the codec's primitives: checks our
// client's answers decrypt to what netatalk's uams_dhx2_passwd expects.
TEST(AfpUam, Dhx2AgainstAScriptedServer) {
  // RFC 2409 group 2, g = 2.
  const std::string p = unhex(
      "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A087"
      "98E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6"
      "B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF");
  const std::string rs = std::string(127, '\x11') + "\x05";  // server secret
  const std::string ms = crypto::mod_exp("\x02", rs, p, 128);
  for (bool honest : {true, false}) {
    auto uam = make_uam(kUamDhx2, "alice", "s3cret", counting);
    uam->login("AFP3.4");
    const std::string cont1 =
        uam->next(Writer().u16(0x0707).u32(2).u16(128).bytes(p).bytes(ms).take());
    Reader r(cont1, "cont1");
    r.skip(2, "cmd");
    EXPECT_EQ(r.u16("id"), 0x0707);
    const std::string ma(r.bytes(128, "Ma"));
    // The client used our counting() bytes as its secret.
    EXPECT_EQ(ma, crypto::mod_exp("\x02", counting(128), p, 128));
    const std::string key = crypto::md5(crypto::mod_exp(ma, rs, p, 128));
    const std::string nonce = crypto::cast5_cbc(false, key, kClientToServerIV, r.bytes(16, "n"));
    EXPECT_EQ(nonce, counting(16));
    const std::string server_nonce(16, '\x42');
    const std::string proof = honest ? crypto::increment(nonce) : nonce;
    const std::string reply2 =
        Writer()
            .u16(0x0708)
            .bytes(crypto::cast5_cbc(true, key, kServerToClientIV, proof + server_nonce))
            .take();
    if (!honest) {
      EXPECT_THROW(uam->next(reply2), Error);
      continue;
    }
    const std::string cont2 = uam->next(reply2);
    Reader r2(cont2, "cont2");
    r2.skip(2, "cmd");
    EXPECT_EQ(r2.u16("id"), 0x0708);
    const std::string plain = crypto::cast5_cbc(false, key, kClientToServerIV, r2.rest());
    ASSERT_EQ(plain.size(), 272u);
    EXPECT_EQ(plain.substr(0, 16), crypto::increment(server_nonce));
    EXPECT_EQ(plain.substr(16), zero_padded_for_test("s3cret", 256));
  }
}

TEST(AfpUam, MalformedChallengesNameTheField) {
  auto field_of = [](const std::string& uam, const std::string& reply) -> std::string {
    auto u = make_uam(uam, "u", "p", counting);
    u->login("AFP3.4");
    try {
      u->next(reply);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer);
      return e.what();
    }
    return "no error";
  };
  const std::string p(64, '\xff');  // odd, 512 bits
  EXPECT_NE(field_of("DHX2", Writer().u16(1).u32(2).u16(8).bytes(std::string(16, 1)).take())
                .find("'prime length'"),
            std::string::npos);
  EXPECT_NE(
      field_of("DHX2", Writer().u16(1).u32(2).u16(64).bytes(p).take()).find("'server public key'"),
      std::string::npos);
  std::string even = p;
  even.back() = '\xfe';
  EXPECT_NE(field_of("DHX2", Writer().u16(1).u32(2).u16(64).bytes(even).bytes(p).take())
                .find("'prime p'"),
            std::string::npos);
  // A public key of 1 would make the shared secret 1.
  EXPECT_NE(
      field_of("DHX2",
               Writer().u16(1).u32(2).u16(64).bytes(p).bytes(std::string(63, 0) + "\x01").take())
          .find("'server public key'"),
      std::string::npos);
  EXPECT_NE(field_of("DHX2", Writer().u16(1).u32(1).u16(64).bytes(p).bytes(p).take())
                .find("'generator g'"),
            std::string::npos);
  EXPECT_NE(field_of("DHCAST128", std::string(49, '\x01')).find("'length'"), std::string::npos);
  EXPECT_NE(field_of("DHCAST128", std::string(2, 0) + std::string(16, 0) + std::string(32, 0))
                .find("'server public key'"),
            std::string::npos);
  EXPECT_NE(field_of("Cleartxt Passwrd", "").find("continue"), std::string::npos);
}

}  // namespace
}  // namespace cp::transfer::afp
