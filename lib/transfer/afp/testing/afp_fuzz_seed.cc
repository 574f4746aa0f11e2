// Writes the afp_fuzz seed corpus into the directory argv[1]: the
// captures' server replies (and client requests, and stream prefixes), each
// behind the selector byte of the parser that reads it (see afp_fuzz.cc).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <set>

#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_uam.h"
#include "transfer/afp/testing/afp_capture.h"

using namespace cp::transfer;  // NOLINT

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: afp_fuzz_seed CORPUS_DIR\n";
    return 2;
  }
  // Replies this size or smaller; bigger ones are file data.
  constexpr size_t kMax = 8192;
  std::set<std::string> seeds;
  auto add = [&](uint8_t selector, std::string_view bytes) {
    if (bytes.size() <= kMax)
      seeds.insert(std::string(1, static_cast<char>(selector)) + std::string(bytes));
  };
  try {
    for (const auto& name : testing::afp_capture_names()) {
      for (const auto& c : testing::load_afp_capture(name)) {
        std::string stream;
        for (const auto& m : c.from_server) {
          const std::string bytes = dsi::encode_message(m.header, m.payload);
          if (stream.size() + bytes.size() > kMax) break;
          stream += bytes;
        }
        add(0, stream);
        add(14, stream);
        for (const auto& e : c.exchanges) {
          if (e.request.header.command == dsi::kCommand) add(12, e.request.payload);
          if (!e.reply) continue;
          const std::string& p = e.reply->payload;
          if (e.request.header.command == dsi::kGetStatus) add(1, p);
          if (e.request.header.command == dsi::kOpenSession) add(9, p);
          switch (e.afp_command()) {
            case afp::kFPGetSrvrParms:
              add(2, p);
              break;
            case afp::kFPOpenVol:
              add(3, p);
              break;
            case afp::kFPGetFileDirParms:
              add(4, p);
              break;
            case afp::kFPOpenFork:
              add(5, p);
              break;
            case afp::kFPWriteExt:
              add(6, p);
              break;
            case afp::kFPEnumerateExt2:
              add(7, p);
              break;
            case afp::kFPGetSrvrMsg:
              add(8, p);
              break;
            case afp::kFPLogin:
            case afp::kFPLoginCont:
              if (e.reply->header.error() == afp::kFPAuthContinue) {
                add(p.size() == 50 ? 11 : 10, p);
              }
              break;
          }
          add(15, p);
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "afp_fuzz_seed: " << e.what() << "\n";
    return 1;
  }
  add(13, std::string("\x80\x05", 2));
  size_t n = 0;
  for (const auto& s : seeds) {
    std::ofstream(fmt::format("{}/seed-{:02d}-{:04d}", argv[1], uint8_t(s[0]), n++),
                  std::ios::binary)
        << s;
  }
  std::cout << "afp_fuzz_seed: wrote " << n << " seeds to " << argv[1] << "\n";
  return 0;
}
