// libFuzzer target: every parser of AFP server input in the afp driver. The
// first input byte picks the parser, the rest is what the server "sent". A
// parser may accept its input or throw cp::Error; anything else (a crash,
// another exception, a sanitizer report, a CP_CHECK) is a bug.
// Built only with clang; scripts/fuzz-afp.sh builds and runs it with a seed
// corpus of the captures' server replies (testing/afp_fuzz_seed.cc).
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_uam.h"
#include "transfer/afp/dsi.h"

namespace {

using namespace cp::transfer;  // NOLINT

std::string fixed_random(size_t n) { return std::string(n, '\x5a'); }

// The driver's socket reader: the input is everything the server sends on
// a connection where the client has two requests in flight.
void connection(std::string_view in) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return;
  // Inputs are small (libFuzzer's -max_len): they fit the socket buffer.
  if (::send(sv[1], in.data(), in.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(in.size())) {
    ::close(sv[0]);
    ::close(sv[1]);
    return;
  }
  ::shutdown(sv[1], SHUT_WR);
  dsi::ConnectionConfig cfg;
  cfg.max_reply = 1 << 16;
  dsi::Connection c(sv[0], "fuzz:548", cfg);
  try {
    const uint16_t a = c.send_command(afp::encode_read_ext(1, 0, 100));
    const uint16_t b = c.send_write(afp::encode_write_ext_header(1, 0, 3), "abc");
    c.discard(b);
    c.wait(a);
    c.keepalive(0);
  } catch (const cp::Error&) {
  }
  ::close(sv[1]);
}

// The replies selectors 1-8 decode, in that order (the seed corpus's
// selector bytes); selector 15 tries the input as each of them.
constexpr uint8_t kReplies[] = {afp::kFPGetSrvrInfo,     afp::kFPGetSrvrParms, afp::kFPOpenVol,
                                afp::kFPGetFileDirParms, afp::kFPOpenFork,     afp::kFPWriteExt,
                                afp::kFPEnumerateExt2,   afp::kFPGetSrvrMsg,   afp::kFPCloseFork};

void run(uint8_t selector, std::string_view in) {
  switch (selector) {
    case 0: {
      dsi::StreamDecoder d(1 << 20);
      d.feed(in);
      while (auto m = d.next()) {
        if (m->header.command == dsi::kOpenSession) dsi::decode_options(m->payload);
        if (m->header.command == dsi::kAttention) afp::decode_attention(m->payload);
      }
      break;
    }
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
      afp::decode_reply(kReplies[selector - 1], in);
      break;
    case 9:
      dsi::decode_options(in);
      break;
    case 10: {
      auto u = afp::make_uam(afp::kUamDhx2, "user", "password", fixed_random);
      u->login("AFP3.4");
      u->next(in);
      u->next(in);  // a second challenge: the proof step's parser
      break;
    }
    case 11: {
      auto u = afp::make_uam(afp::kUamDhcast128, "user", "password", fixed_random);
      u->login("AFP3.4");
      u->next(in);
      break;
    }
    case 12:
      afp::decode_request(in);
      break;
    case 13:
      afp::decode_attention(in);
      break;
    case 14:
      connection(in);
      break;
    case 15:
      for (uint8_t c : kReplies) {
        try {
          afp::decode_reply(c, in);
        } catch (const cp::Error&) {
        }
      }
      break;
  }
}

}  // namespace

// Number of parsers; the seed tool writes selector bytes below it.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    run(data[0] % 16, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const cp::Error&) {
    // Rejected input: fine.
  }
  return 0;
}
