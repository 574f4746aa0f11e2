// The static server agents as they reach a server (scripts/build-agents.sh:
// build/bin/chokepoint-agent-server-ARCH): each is a static ELF for its
// machine, and each serves a wire-protocol session (hello, facts, disk, TCP
// on loopback, cleanup) as its own process; the aarch64 one under qemu-user,
// its TCP peer the x86_64 full agent, as a diagnosis would pair them.
#include <elf.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/process.h"
#include "core/wire.h"
#include "link/agent_link.h"

namespace cp {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

struct Arch {
  std::string name;      // `uname -m`
  uint16_t machine;      // ELF e_machine
  std::string emulator;  // "" when it runs natively here
};

void PrintTo(const Arch& a, std::ostream* os) { *os << a.name; }

std::string server_agent(const Arch& a) {
  return std::string(CHOKEPOINT_BIN_DIR) + "/chokepoint-agent-server-" + a.name;
}

// A running agent: its process and the link to it.
struct RunningAgent {
  std::unique_ptr<Child> child;
  std::unique_ptr<remote::AgentLink> link;
  msg::Hello hello;
};

RunningAgent start(std::vector<std::string> argv, const std::string& name) {
  RunningAgent r;
  argv.push_back("--serve");
  r.child = std::make_unique<Child>(argv);
  r.link = std::make_unique<remote::AgentLink>(
      remote::make_fd_stream(dup(r.child->stdout_fd()), dup(r.child->stdin_fd()), name), name);
  r.child->close_stdin();
  r.hello = r.link->handshake(60);  // qemu starts in well under a second; a loaded CI is slow
  return r;
}

class StaticServerAgent : public ::testing::TestWithParam<Arch> {};

TEST_P(StaticServerAgent, IsAStaticElfForItsMachine) {
  const std::string path = server_agent(GetParam());
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing: scripts/build-agents.sh builds it";
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  ASSERT_EQ(std::memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(eh.e_ident[EI_CLASS], ELFCLASS64);
  EXPECT_EQ(eh.e_machine, GetParam().machine);
  // Static: no program interpreter (ld.so) and so no shared library at all.
  int interp = 0, dynamic = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    const size_t off = eh.e_phoff + size_t(i) * eh.e_phentsize;
    ASSERT_LE(off + sizeof(Elf64_Phdr), bytes.size());
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + off, sizeof ph);
    interp += ph.p_type == PT_INTERP;
    dynamic += ph.p_type == PT_DYNAMIC;
  }
  EXPECT_EQ(interp, 0);
  EXPECT_EQ(dynamic, 0);
}

TEST_P(StaticServerAgent, ServesAWireProtocolSession) {
  const Arch& a = GetParam();
  std::vector<std::string> argv;
  if (!a.emulator.empty()) argv.push_back(a.emulator);
  argv.push_back(server_agent(a));
  RunningAgent server = start(argv, "server " + a.name);
  EXPECT_EQ(server.hello.arch, a.name);
  EXPECT_EQ(server.hello.role, "server");
  EXPECT_TRUE(server.hello.drivers.empty());

  json::object facts = server.link->call("facts", {{"peer_address", "127.0.0.1"}}, 120);
  EXPECT_GE(wire::get_u64(facts, "cpu_cores"), 1u);
  EXPECT_FALSE(wire::get_string(facts, "kernel").empty());

  const fs::path base =
      fs::temp_directory_path() / ("static-agent-" + a.name + "-" + std::to_string(getpid()));
  fs::create_directories(base);
  json::object p = server.link->call("prepare", {{"dirs", json::array{base.string()}}}, 30);
  const std::string run_dir = msg::decode<msg::PrepareResult>(p, "prepare").dirs.at(base.string());
  ASSERT_TRUE(fs::is_directory(run_dir));
  json::object w = server.link->call(
      "disk", {{"dir", base.string()}, {"op", "write"}, {"name", "d.dat"}, {"size", 4u << 20}},
      120);
  EXPECT_EQ(msg::decode<msg::DiskResult>(w, "disk").bytes, 4u << 20);
  EXPECT_EQ(fs::file_size(run_dir + "/d.dat"), 4u << 20);
  json::object r =
      server.link->call("disk", {{"dir", base.string()}, {"op", "read"}, {"name", "d.dat"}}, 120);
  EXPECT_EQ(msg::decode<msg::DiskResult>(r, "disk").bytes, 4u << 20);
  // A share file laid out and checked, as for the protocol stages.
  json::object m = server.link->call(
      "make_file", {{"dir", base.string()}, {"name", "s.dat"}, {"size", 1u << 20}}, 120);
  json::object fi =
      server.link->call("file_info", {{"dir", base.string()}, {"name", "s.dat"}}, 120);
  EXPECT_EQ(msg::decode<msg::FileResult>(fi, "file_info").checksum,
            msg::decode<msg::FileResult>(m, "make_file").checksum);

  // TCP on loopback: the full agent (this machine's) sends to the server agent.
  RunningAgent client = start({CHOKEPOINT_BIN_DIR "/chokepoint-agent"}, "client");
  const uint64_t port =
      msg::decode<msg::TcpListenResult>(
          server.link->call("tcp_listen", {{"bind", "127.0.0.1"}}, 30), "tcp_listen")
          .port;
  auto result = std::async(std::launch::async, [&] {
    return server.link->call("tcp_result", {{"token", "t1"}, {"timeout", 60}}, 120);
  });
  json::object sent = client.link->call(
      "tcp_run",
      {{"host", "127.0.0.1"}, {"port", port}, {"token", "t1"}, {"mode", "send"}, {"seconds", 0.5}},
      120);
  json::object got = result.get();
  const uint64_t sent_bytes = msg::decode<msg::TcpResult>(sent, "tcp_run").bytes;
  EXPECT_GT(sent_bytes, 0u);
  EXPECT_EQ(msg::decode<msg::TcpResult>(got, "tcp_result").bytes, sent_bytes);

  server.link->call("cleanup", {}, 60);
  EXPECT_FALSE(fs::exists(run_dir));
  client.link.reset();
  server.link.reset();  // EOF: the agent exits
  EXPECT_EQ(server.child->wait(30), 0);
  EXPECT_EQ(client.child->wait(30), 0);
  fs::remove_all(base);
}

INSTANTIATE_TEST_SUITE_P(Archs, StaticServerAgent,
                         ::testing::Values(Arch{"x86_64", EM_X86_64, ""},
                                           Arch{"aarch64", EM_AARCH64, "qemu-aarch64-static"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cp
