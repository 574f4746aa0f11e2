#include "tune_agent/agent_requests.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/process.h"
#include "tune_agent/apply.h"

namespace cp::tune {
namespace {

namespace json = boost::json;

int mtu_of(const std::string& ifname) {
  return parse_link_mtu(run_command({"ip", "-o", "link", "show", "dev", ifname}).out);
}

// Runs `body` in a child process in a network namespace of its own, with a
// veth pair cpt0 (10.99.0.1) / cpt1 that "SSH" (SSH_CONNECTION) comes in on.
// The child's exit code is the number of the first failed check (0: all held).
int in_private_netns(const std::function<int()>& body) {
  const std::string state = "/var/tmp/chokepoint-tune-netns-" + std::to_string(getpid());
  pid_t pid = fork();
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(100);
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"ip", "link", "add", "cpt0", "type", "veth", "peer", "name",
                                   "cpt1"},
          {"ip", "addr", "add", "10.99.0.1/24", "dev", "cpt0"},
          {"ip", "link", "set", "cpt0", "up"},
          {"ip", "link", "set", "cpt1", "up"}}) {
      if (run_command(cmd).exit_code != 0) _exit(101);
    }
    setenv("SSH_CONNECTION", "10.99.0.2 40000 10.99.0.1 22", 1);
    setenv("CHOKEPOINT_TUNE_STATE_DIR", state.c_str(), 1);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::filesystem::remove_all(state);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

json::object mtu_request(const std::string& value, bool console, int confirm_s) {
  return {{"knob", "link.mtu"},
          {"value", value},
          {"data_address", "10.99.0.1"},
          {"console", console},
          {"confirm_s", confirm_s}};
}

TEST(MtuOnTheSshInterface, IsRefusedWithoutAConsole) {
  const int rc = in_private_netns([] {
    try {
      handle_tune_request("tune_apply", mtu_request("1400", false, 1));
      return 1;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUnsupported) return 2;
    }
    return mtu_of("cpt0") == 1500 ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

TEST(MtuOnTheSshInterface, RevertsByItselfWhenNotConfirmed) {
  const int rc = in_private_netns([] {
    json::object r = handle_tune_request("tune_apply", mtu_request("1400", true, 1));
    if (!r.at("cuts_ssh").as_bool()) return 1;
    if (mtu_of("cpt0") != 1400) return 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    if (mtu_of("cpt0") != 1500) return 3;  // the watchdog put it back
    json::object c = handle_tune_request("tune_confirm", {});
    return c.at("confirmed").as_bool() ? 4 : 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(MtuOnTheSshInterface, StaysWhenConfirmedInTime) {
  const int rc = in_private_netns([] {
    handle_tune_request("tune_apply", mtu_request("1400", true, 2));
    json::object c = handle_tune_request("tune_confirm", {});
    if (!c.at("confirmed").as_bool()) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    if (mtu_of("cpt0") != 1400) return 2;
    handle_tune_request("tune_revert", {});
    return mtu_of("cpt0") == 1500 ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

TEST(IpOutput, InterfaceRouteAndMtuAreParsed) {
  EXPECT_EQ(parse_addr_ifname("3: cpd-s    inet 198.19.6.1/24 scope global cpd-s\\"), "cpd-s");
  EXPECT_EQ(parse_addr_ifname("5: eth0@if6    inet 10.0.0.2/24"), "eth0");
  EXPECT_EQ(parse_addr_ifname(""), "");
  EXPECT_EQ(parse_route_dev("198.19.6.1 dev cpd-c src 198.19.6.2 uid 0"), "cpd-c");
  EXPECT_EQ(parse_link_mtu("1: lo: <LOOPBACK,UP> mtu 65536 qdisc noqueue"), 65536);
  EXPECT_EQ(ssh_local_address("10.0.0.9 51000 10.0.0.1 22"), "10.0.0.1");
  EXPECT_EQ(ssh_local_address(nullptr), "");
}

}  // namespace
}  // namespace cp::tune
