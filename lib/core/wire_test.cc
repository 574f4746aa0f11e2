#include "core/wire.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cp::wire {
namespace {

std::string frame_of(std::string_view body) {
  std::string s;
  const uint32_t n = static_cast<uint32_t>(body.size());
  s.push_back(char(n >> 24));
  s.push_back(char(n >> 16));
  s.push_back(char(n >> 8));
  s.push_back(char(n));
  return s + std::string(body);
}

std::string error_of(std::string_view bytes) {
  Decoder d;
  d.feed(bytes);
  try {
    d.next();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    return e.what();
  }
  return "";
}

TEST(Wire, RoundTripAcrossSplitFeeds) {
  json::object m{{"type", "hello"}, {"id", 7}, {"x", "y"}};
  std::string a = encode(m);
  std::string b = encode(json::object{{"type", "bye"}, {"id", 8}});
  std::string all = a + b;
  Decoder d;
  std::vector<json::object> got;
  for (char c : all) {  // byte by byte: frames may arrive in any pieces
    d.feed(std::string_view(&c, 1));
    while (auto msg = d.next()) got.push_back(*msg);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(get_string(got[0], "type"), "hello");
  EXPECT_EQ(get_u64(got[0], "id"), 7u);
  EXPECT_EQ(get_u64(got[0], "v"), uint64_t(kProtocolVersion));
  EXPECT_EQ(get_string(got[1], "type"), "bye");
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(Wire, IncompleteFrameWaits) {
  std::string a = encode(json::object{{"type", "t"}, {"id", 1}});
  Decoder d;
  d.feed(std::string_view(a).substr(0, a.size() - 1));
  EXPECT_FALSE(d.next().has_value());
  d.feed(std::string_view(a).substr(a.size() - 1));
  EXPECT_TRUE(d.next().has_value());
}

TEST(Wire, RejectsOversizeFrameBeforeReadingIt) {
  std::string header = {char(0x7f), char(0), char(0), char(0)};
  EXPECT_NE(error_of(header).find("over the"), std::string::npos);
}

TEST(Wire, RejectsMalformed) {
  EXPECT_NE(error_of(frame_of("{nope")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(frame_of("[1,2]")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(frame_of(R"({"type":"x","id":1})")).find("'v' missing"), std::string::npos);
  EXPECT_NE(error_of(frame_of(R"({"v":1,"id":1})")).find("'type' missing"), std::string::npos);
  EXPECT_NE(error_of(frame_of(R"({"v":1,"type":3,"id":1})")).find("'type' must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(frame_of(R"({"v":1,"type":"x"})")).find("'id' missing"), std::string::npos);
  EXPECT_NE(error_of(frame_of(R"({"v":1,"type":"x","id":-4})")).find("'id' must be"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(4, '\0')).find("empty frame"), std::string::npos);
}

TEST(Wire, RejectsOtherVersion) {
  std::string e = error_of(frame_of(R"({"v":99,"type":"hello","id":1})"));
  EXPECT_NE(e.find("protocol version 99"), std::string::npos);
}

TEST(Wire, EncodeRefusesOversize) {
  json::object m{{"type", "big"}, {"id", 1}, {"blob", std::string(kMaxFrame, 'a')}};
  EXPECT_THROW(encode(m), Error);
}

TEST(Wire, FieldAccessorsNameTheField) {
  json::object m{{"type", "disk"}, {"size", "big"}, {"n", 3}, {"f", 1.5}};
  try {
    get_u64(m, "size");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "message 'disk': field 'size' must be a non-negative integer");
  }
  EXPECT_EQ(get_u64(m, "n"), 3u);
  EXPECT_DOUBLE_EQ(get_double(m, "n"), 3.0);
  EXPECT_DOUBLE_EQ(get_double(m, "f"), 1.5);
  EXPECT_EQ(opt_u64(m, "absent", 9), 9u);
  EXPECT_THROW(opt_u64(m, "size", 9), Error);
  EXPECT_THROW(get_string(m, "absent"), Error);
}

TEST(Wire, Sentinel) {
  std::string line = sentinel_line("abc123");
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto s = parse_sentinel(line);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->proto, kProtocolVersion);
  EXPECT_EQ(s->build_id, "abc123");
  EXPECT_FALSE(parse_sentinel("Welcome to Debian"));
  EXPECT_FALSE(parse_sentinel("CHOKEPOINT-AGENT READY proto=x build=1"));
  EXPECT_FALSE(parse_sentinel("CHOKEPOINT-AGENT READY proto=1"));
}

// A hostile peer that sends a whole frame and then a partial one, over and
// over, never lets the buffer empty: the consumed frames must still be
// dropped (by offset), so what the decoder holds stays one partial frame.
TEST(SecurityWire, APeerThatAlwaysLeavesAPartialFrameCannotGrowTheBuffer) {
  const std::string hb = encode(json::object{{"type", "heartbeat"}, {"id", 1}});
  Decoder d;
  size_t most_held = 0, most_capacity = 0, frames = 0;
  // Each feed: the tail of the previous partial frame, a whole frame, and the
  // head of the next one (the split point moves).
  std::string carry;
  for (int i = 0; i < 20000; ++i) {
    const size_t cut = 1 + static_cast<size_t>(i) % (hb.size() - 1);
    d.feed(carry + hb + hb.substr(0, cut));
    carry = hb.substr(cut);
    while (d.next()) ++frames;
    EXPECT_GT(d.buffered(), 0u);  // a partial frame is always left
    most_held = std::max(most_held, d.held());
    most_capacity = std::max(most_capacity, d.capacity());
  }
  EXPECT_EQ(frames, 2u * 20000 - 1);
  // At most the partial frame left and one feed (< 4 frames) are held: far
  // under the 20000 frames (~ 1 MB) fed, and under the stated cap.
  EXPECT_LE(most_held, 4 * hb.size());
  EXPECT_LE(most_capacity, kMaxBuffered);
}

TEST(SecurityWire, AFrameHeaderOverTheCapIsRefusedNamingSizeAndCap) {
  Decoder d;
  const uint32_t n = kMaxFrame + 1;
  std::string header{char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  d.feed(header);
  try {
    d.next();
    FAIL() << "an oversize header was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxFrame + 1)), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxFrame)), std::string::npos);
  }
}

// Bytes fed without taking frames out never pass the cap: the feed that would
// is refused (a peer flooding a caller that stopped reading frames).
TEST(SecurityWire, FeedingPastTheBufferCapIsAPeerError) {
  Decoder d;
  const std::string chunk(64u << 10, 'x');
  size_t fed = 0;
  try {
    for (;;) {
      d.feed(chunk);
      fed += chunk.size();
      ASSERT_LE(fed, kMaxBuffered);
    }
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
  }
  EXPECT_LE(d.held(), kMaxBuffered);
  EXPECT_LE(d.capacity(), kMaxBuffered);
}

TEST(SecurityWire, PrintableEscapesControlCharactersAndCapsLength) {
  EXPECT_EQ(printable("host\x1b[2Jname\n"), "host\\x1b[2Jname\\x0a");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(printable("a\xff"), "a\\xff");             // not UTF-8: escaped
  EXPECT_EQ(printable(std::string(5000, 'a'), 10), std::string(10, 'a') + "...(5000 bytes)");
}

}  // namespace
}  // namespace cp::wire
