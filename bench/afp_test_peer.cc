// afp_test_peer: the project's AFP test server (lib/transfer/testing) as a
// process of its own, for bench/protocols.sh to drive the afp driver
// (bench/transfer_bench) against, with a delay line standing in for a
// network's round trip. Serves one volume "vol" from DIR to user "bench"
// (password "bench") on 127.0.0.1, prints "port=N" and runs until its
// standard input closes.
//
//   afp_test_peer --dir /dev/shm/afp --delay-ms 5 [--quantum 1MiB]
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "transfer/afp/testing/afp_test_server.h"

int main(int argc, char** argv) {
  cp::transfer::testing::TestServerConfig cfg;
  std::string dir;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw cp::Error(cp::ErrorKind::kConfig, a + " needs a value");
        return argv[++i];
      };
      if (a == "--dir") {
        dir = value();
      } else if (a == "--delay-ms") {
        cfg.reply_delay_ms = std::stod(value());
      } else if (a == "--quantum") {
        cfg.quantum = static_cast<uint32_t>(cp::parse_size(value(), "--quantum"));
      } else {
        throw cp::Error(cp::ErrorKind::kConfig, "unknown option " + a,
                        "usage: afp_test_peer --dir DIR [--delay-ms MS] [--quantum SIZE]");
      }
    }
    if (dir.empty()) {
      throw cp::Error(cp::ErrorKind::kConfig, "no --dir",
                      "usage: afp_test_peer --dir DIR [--delay-ms MS] [--quantum SIZE]");
    }
  } catch (const std::exception& e) {
    std::cerr << "afp_test_peer: " << e.what() << "\n";
    return 2;
  }
  cfg.volumes = {{"vol", dir}};
  cfg.users = {{"bench", "bench"}};
  cp::transfer::testing::AfpTestServer server(cfg);
  std::cout << "port=" << server.port() << std::endl;
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  return 0;
}
