// Writes the afp_fuzz seed corpus into the directory argv[1]: the
// captures' server replies (and client requests, and stream prefixes), each
// behind the selector byte of the parser that reads it (see afp_fuzz.cc).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_uam.h"
#include "transfer/afp/testing/afp_capture.h"

using namespace cp::transfer;  // NOLINT

namespace {

// The selector of the parser that reads the reply to each AFP command.
const std::map<uint8_t, uint8_t> kSelectorOfReply = {
    {afp::kFPGetSrvrParms, 2}, {afp::kFPOpenVol, 3},  {afp::kFPGetFileDirParms, 4},
    {afp::kFPOpenFork, 5},     {afp::kFPWriteExt, 6}, {afp::kFPEnumerateExt2, 7},
    {afp::kFPGetSrvrMsg, 8},
};

}  // namespace

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
          if (const auto it = kSelectorOfReply.find(e.afp_command()); it != kSelectorOfReply.end())
            add(it->second, p);
          const bool login =
              e.afp_command() == afp::kFPLogin || e.afp_command() == afp::kFPLoginCont;
          if (login && e.reply->header.error() == afp::kFPAuthContinue)
            add(p.size() == 50 ? 11 : 10, p);
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
