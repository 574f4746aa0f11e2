// afp_test_peer: the project's AFP test server (lib/transfer/testing) as a
// process of its own, for bench/protocols.sh to drive the afp driver
// (bench/transfer_bench) against, with a delay line standing in for a
// network's round trip. Serves one volume "vol" from DIR to user "bench"
// (password "bench") on 127.0.0.1, prints "port=N" and runs until its
// standard input closes.
//
//   afp_test_peer --dir /dev/shm/afp --delay-ms 5 [--quantum 1MiB]
//
// As a stand-in for afpd under `chokepoint tune` (netatalk's knobs):
// --afp-conf FILE takes the quantum from `server quantum` in its [Global]
// (netatalk's default, 1 MiB, when unset), as afpd does at start; --port N
// listens there (a restart keeps the share's URL); --pid-file FILE writes
// the PID once listening and runs until SIGTERM/SIGINT (then removes it),
// so that a restart command can stop it by PID and start it again.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "transfer/testing/afp_test_server.h"

namespace {

std::string squeeze_lower(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// `server quantum` of afp.conf's [Global]; 1 MiB (netatalk's default) when unset.
uint32_t quantum_from_afp_conf(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw cp::Error(cp::ErrorKind::kConfig, "cannot read " + path);
  bool global = false;
  uint32_t quantum = 1u << 20;
  for (std::string line; std::getline(in, line);) {
    const std::string t = squeeze_lower(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[') {
      global = t == "[global]";
      continue;
    }
    const size_t eq = t.find('=');
    if (!global || eq == std::string::npos) continue;
    std::string key = t.substr(0, eq), value = t.substr(eq + 1);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (key == "server quantum") {
      quantum = static_cast<uint32_t>(cp::parse_size(value, path + ": server quantum"));
    }
  }
  return quantum;
}

}  // namespace

int main(int argc, char** argv) {
  cp::transfer::testing::TestServerConfig cfg;
  std::string dir, pid_file;
  const char* usage =
      "usage: afp_test_peer --dir DIR [--delay-ms MS] [--quantum SIZE | --afp-conf FILE] "
      "[--port N] [--pid-file FILE]";
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
      } else if (a == "--afp-conf") {
        cfg.quantum = quantum_from_afp_conf(value());
      } else if (a == "--port") {
        cfg.port = static_cast<uint16_t>(std::stoul(value()));
      } else if (a == "--pid-file") {
        pid_file = value();
      } else {
        throw cp::Error(cp::ErrorKind::kConfig, "unknown option " + a, usage);
      }
    }
    if (dir.empty()) throw cp::Error(cp::ErrorKind::kConfig, "no --dir", usage);
  } catch (const std::exception& e) {
    std::cerr << "afp_test_peer: " << e.what() << "\n";
    return 2;
  }
  cfg.volumes = {{"vol", dir}};
  cfg.users = {{"bench", "bench"}};
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (!pid_file.empty()) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before threads
  auto server = std::make_unique<cp::transfer::testing::AfpTestServer>(cfg);
  std::cout << "port=" << server->port() << std::endl;
  if (!pid_file.empty()) {
    std::ofstream(pid_file + ".tmp") << ::getpid() << "\n";
    std::rename((pid_file + ".tmp").c_str(), pid_file.c_str());  // whole, once listening
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.reset();  // the port is free before the PID file goes
    ::unlink(pid_file.c_str());
    return 0;
  }
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  return 0;
}
