// Unit tests of the smb driver's NEGOTIATE/ECHO codec (smb_negotiate.cc);
// drivers_lab_test.cc probes a real smbd.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

// An SMB2 NEGOTIATE response frame as a server sends it (length prefix,
// header, the body's first 64 bytes), with the given status and sizes.
std::string negotiate_response(uint32_t status, uint16_t dialect, uint32_t max_read,
                               uint32_t max_write) {
  std::string m(64 + 64, '\0');
  m.replace(0, 4, "\xfeSMB");
  auto put = [&](size_t at, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) m[at + i] = static_cast<char>(v >> (8 * i));
  };
  put(4, 64, 2);
  put(8, status, 4);
  put(12, 0, 2);   // NEGOTIATE
  put(64, 65, 2);  // structure size
  put(68, dialect, 2);
  put(64 + 28, 8u << 20, 4);
  put(64 + 32, max_read, 4);
  put(64 + 36, max_write, 4);
  std::string frame(1, '\0');
  frame += static_cast<char>(m.size() >> 16);
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size());
  return frame + m;
}

TEST(SmbNegotiate, RequestOffersTheDialectsBetweenMinAndMax) {
  const std::string r = smb2_negotiate_request(0x0210, 0x0302);
  ASSERT_EQ(r.size(), 4u + 64 + 36 + 3 * 2);
  EXPECT_EQ(r.substr(4, 4), std::string("\xfeSMB"));
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64 + 2]), 3);  // dialect count
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64 + 36]), 0x10);
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64 + 37]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64 + 40]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64 + 41]), 0x03);
  EXPECT_EQ(smb2_dialect_of("SMB3"), 0x0311);
  EXPECT_EQ(smb2_dialect_of("SMB2_02"), 0x0202);
  EXPECT_EQ(smb2_dialect_of("NT1"), 0);
}

TEST(SmbNegotiate, Smb1RequestOffersNtLm012Only) {
  const std::string r = smb1_negotiate_request();
  EXPECT_EQ(r.substr(4, 4), std::string("\xffSMB"));
  EXPECT_EQ(static_cast<uint8_t>(r[8]), 0x72);  // NEGOTIATE
  const size_t len = (size_t{static_cast<uint8_t>(r[2])} << 8) | static_cast<uint8_t>(r[3]);
  EXPECT_EQ(len + 4, r.size());
  EXPECT_EQ(r.substr(4 + 32 + 3), std::string("\x02NT LM 0.12") + '\0');
  EXPECT_TRUE(is_smb1_protocol("NT1"));
  EXPECT_FALSE(is_smb1_protocol("SMB2_02"));
  EXPECT_EQ(smb2_dialect_name(0x0302), "SMB3_02");
}

// An NT LM 0.12 answer: 17 words, dialect index, MaxBufferSize at word 3.
std::string smb1_response(uint16_t index, uint32_t max_buffer) {
  std::string m = "\xffSMB";
  m += static_cast<char>(0x72);
  m.append(27, '\0');
  m += static_cast<char>(17);
  std::string words(34, '\0');
  words[0] = static_cast<char>(index & 0xff);
  words[1] = static_cast<char>(index >> 8);
  for (int i = 0; i < 4; ++i) words[7 + i] = static_cast<char>((max_buffer >> (8 * i)) & 0xff);
  m += words;
  m.append(2, '\0');  // byte count
  std::string frame(1, '\0');
  frame += '\0';
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size() & 0xff);
  return frame + m;
}

TEST(SmbNegotiate, Smb1AnswerGivesNt1AndMaxXmit) {
  const Smb1Negotiate n = parse_smb1_negotiate_response(smb1_response(0, 16644));
  EXPECT_TRUE(n.nt1);
  EXPECT_EQ(n.max_buffer_size, 16644u);
  // No dialect chosen (index 0xffff): not NT1.
  EXPECT_FALSE(parse_smb1_negotiate_response(smb1_response(0xffff, 0)).nt1);
  EXPECT_THROW(parse_smb1_negotiate_response("\0\0\0\4\xfeSMB"), Error);
}

TEST(SmbNegotiate, ReadsTheServersMaximumSizes) {
  const Smb2Limits l = parse_smb2_negotiate_response(negotiate_response(0, 0x0302, 16384, 65536));
  EXPECT_EQ(l.dialect, 0x0302);
  EXPECT_EQ(l.max_read, 16384u);
  EXPECT_EQ(l.max_write, 65536u);
  EXPECT_EQ(l.max_transact, 8u << 20);
}

TEST(SmbNegotiate, RefusesFailuresShortAnswersAndZeroSizes) {
  EXPECT_THROW(parse_smb2_negotiate_response(negotiate_response(0xC0000022, 0x0302, 1, 1)), Error);
  EXPECT_THROW(parse_smb2_negotiate_response(negotiate_response(0, 0x0302, 0, 65536)), Error);
  EXPECT_THROW(parse_smb2_negotiate_response(negotiate_response(0, 0x0302, 1, 1).substr(0, 50)),
               Error);
  std::string smb1 = negotiate_response(0, 0x0302, 1, 1);
  smb1[4] = '\xff';
  EXPECT_THROW(parse_smb2_negotiate_response(smb1), Error);
}

TEST(SmbEcho, RequestIsAnEchoWithItsMessageIdAndNoSession) {
  const std::string r = smb2_echo_request(0x0000000500000003ull);
  ASSERT_EQ(r.size(), 4u + 64 + 4);
  EXPECT_EQ(static_cast<uint8_t>(r[3]), 64 + 4);  // the direct-TCP length
  EXPECT_EQ(r.substr(4, 4), std::string("\xfeSMB"));
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 12]), 0x0d);  // command ECHO
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 24]), 3);     // message id, low word first
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 28]), 5);
  EXPECT_EQ(r.substr(4 + 40, 8), std::string(8, '\0'));  // session id: none
  EXPECT_EQ(static_cast<uint8_t>(r[4 + 64]), 4);         // structure size
}

TEST(SmbEcho, ResponseMustBeASuccessfulEchoFromTheServer) {
  std::string ok = smb2_echo_request(1);
  ok[4 + 16] = 1;  // flags: server to client
  EXPECT_TRUE(smb2_is_echo_response(ok));
  EXPECT_FALSE(smb2_is_echo_response(smb2_echo_request(1)));  // a request, not an answer
  std::string failed = ok;
  failed[4 + 8] = 0x22;  // a status
  EXPECT_FALSE(smb2_is_echo_response(failed));
  EXPECT_FALSE(smb2_is_echo_response(negotiate_response(0, 0x0302, 65536, 65536)));
  EXPECT_FALSE(smb2_is_echo_response(ok.substr(0, 40)));
}

}  // namespace
}  // namespace cp::transfer
