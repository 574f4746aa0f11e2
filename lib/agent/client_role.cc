#include "agent/client_role.h"

#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <map>

#include "agent/transfer_ops.h"
#include "core/cpu_message.h"
#include "core/error.h"
#include "core/wire.h"
#include "probe/cpu.h"
#include "transfer/driver.h"

namespace cp::agent {
namespace {

namespace json = boost::json;
using wire::get_string;
using wire::get_u64;

uint32_t block_of(const json::object& req) {
  const uint64_t block = wire::opt_u64(req, "block", 1u << 20);
  if (block < 4096 || block > (16u << 20)) {
    throw Error(ErrorKind::kConfig, fmt::format("block size {} is outside 4 KiB .. 16 MiB", block));
  }
  return static_cast<uint32_t>(block);
}

json::object file_json(const FileResult& r) {
  return {{"bytes", r.bytes}, {"seconds", r.seconds}, {"checksum", r.checksum}};
}

class DriverClientRole : public ClientRole {
 public:
  std::vector<std::string> drivers() const override { return transfer::driver_names(); }

  json::object handle(const std::string& type, const ClientCall& call) override {
    if (type == "transfer") return do_transfer(call);
    if (type == "sweep") return do_sweep(call);
    CP_CHECK(false && "ClientRole::handle: not a client request");
    return {};
  }

  void close_shares() override { shares_.clear(); }
  void cancel_sessions() override { sessions_cancel_.cancel(); }

 private:
  transfer::Session& session_for(const json::object& share, const CancelToken& cancel);
  json::object do_transfer(const ClientCall& call);
  json::object do_sweep(const ClientCall& call);

  struct OpenShare {
    std::string url;
    std::unique_ptr<transfer::Driver> driver;
    std::unique_ptr<transfer::Session> session;
  };
  std::map<std::string, OpenShare> shares_;  // by share name: one login per run
  CancelToken sessions_cancel_;              // for driver sessions; set at shutdown
};

transfer::Session& DriverClientRole::session_for(const json::object& share,
                                                 const CancelToken& cancel) {
  const std::string name = get_string(share, "name");
  const std::string url = get_string(share, "url");
  auto it = shares_.find(name);
  if (it != shares_.end() && it->second.url == url) return *it->second.session;
  transfer::Share s;
  s.name = name;
  s.url = url;
  s.user = wire::opt_string(share, "user");
  s.password = wire::opt_string(share, "password");  // never logged or echoed
  if (share.contains("options")) {
    for (const auto& [k, v] : wire::get_object(share, "options")) {
      if (!v.is_string()) {
        throw Error(ErrorKind::kPeer, "message 'transfer': share options must be strings");
      }
      s.options[std::string(k)] = std::string(v.as_string());
    }
  }
  OpenShare open;
  open.url = url;
  open.driver = transfer::make_driver(get_string(share, "driver"));
  // Sessions outlive the request that opened them, and drivers may keep the
  // token they are given: hand them the role's own, cancelled at shutdown.
  cancel.check();
  open.session = open.driver->connect(s, sessions_cancel_);
  auto& slot = shares_[name];
  slot = std::move(open);
  return *slot.session;
}

json::object DriverClientRole::do_transfer(const ClientCall& call) {
  const json::object& req = call.req;
  const std::string op = get_string(req, "op");
  const std::string local = call.local_path(req);
  const std::string remote = get_string(req, "remote");
  transfer::Session& session = session_for(wire::get_object(req, "share"), call.cancel);
  probe::CpuSampler cpu;
  cpu.start();
  FileResult r;
  if (op == "read") {
    r = transfer_read(session, remote, local, wire::opt_u64(req, "size", 0), block_of(req),
                      call.cancel, call.progress);
    if (wire::opt_bool(req, "delete_after", false)) ::unlink(local.c_str());
  } else if (op == "write") {
    r = transfer_write(session, local, remote, block_of(req), call.cancel, call.progress);
    if (wire::opt_bool(req, "delete_after", false)) ::unlink(local.c_str());
  } else {
    throw Error(ErrorKind::kPeer, "message 'transfer': field 'op' must be read or write");
  }
  json::object props;
  for (const auto& [k, v] : session.properties()) props[k] = v;
  json::object out = file_json(r);
  out["properties"] = props;
  out["cpu"] = msg::to_json(cpu.stop());
  return out;
}

json::object DriverClientRole::do_sweep(const ClientCall& call) {
  const json::object& req = call.req;
  transfer::Session& session = session_for(wire::get_object(req, "share"), call.cancel);
  const uint64_t request = get_u64(req, "request");
  if (request == 0 || request > (16u << 20)) {
    throw Error(ErrorKind::kConfig, "sweep request size is outside 1 B .. 16 MiB");
  }
  probe::CpuSampler cpu;
  cpu.start();
  FileResult r =
      sweep_cell(session, get_string(req, "remote"),
                 parse_sweep_pattern(get_string(req, "pattern")), static_cast<uint32_t>(request),
                 get_u64(req, "bytes"), get_u64(req, "file_size"), call.cancel);
  json::object out = file_json(r);
  out["cpu"] = msg::to_json(cpu.stop());
  return out;
}

}  // namespace

std::unique_ptr<ClientRole> make_client_role() { return std::make_unique<DriverClientRole>(); }

}  // namespace cp::agent
