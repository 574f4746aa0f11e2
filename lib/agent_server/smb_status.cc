#include "agent_server/smb_status.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <initializer_list>

#include "core/error.h"
#include "core/process.h"
#include "probe/sysinfo.h"

namespace cp::agent {
namespace json = boost::json;

// What smbd negotiated with each connected client, from `smbstatus --json`
// (libsmbclient does not tell its caller): dialect, signing, encryption.
msg::SmbStatusResult smb_status_op(const msg::SmbStatusRequest& q) {
  std::vector<std::string> argv{"smbstatus", "--json"};
  // The running smbd's config when the plan names none (its state dirs follow it).
  std::string how;
  const std::string conf = probe::samba_config_path(q.conf, &how);
  if (how != "default") {
    argv.push_back("-s");
    argv.push_back(conf);
  }
  RunResult run = run_command(argv, "", 30);
  boost::system::error_code ec;
  json::value v = json::parse(run.out, ec);
  if (run.exit_code != 0 || ec || !v.is_object()) {
    throw Error(
        ErrorKind::kUnsupported,
        fmt::format("smbstatus --json failed (exit {}): {}", run.exit_code, run.err.substr(0, 300)),
        "install Samba 4.16 or later on the server, or run the agent as a user that may "
        "read smbd's state");
  }
  msg::SmbStatusResult out;
  auto it = v.as_object().find("sessions");
  if (it != v.as_object().end() && it->value().is_object()) {
    for (const auto& [id, sv] : it->value().as_object()) {
      if (!sv.is_object()) continue;
      auto text = [&](std::initializer_list<const char*> path) -> std::string {
        const json::value* cur = &sv;
        for (const char* k : path) {
          if (!cur->is_object()) return {};
          auto f = cur->as_object().find(k);
          if (f == cur->as_object().end()) return {};
          cur = &f->value();
        }
        return cur->is_string() ? std::string(cur->as_string()) : std::string();
      };
      out.sessions.push_back({text({"hostname"}), text({"session_dialect"}),
                              text({"signing", "cipher"}), text({"signing", "degree"}),
                              text({"encryption", "cipher"}), text({"encryption", "degree"})});
    }
  }
  return out;
}

}  // namespace cp::agent
