#include "agent/driver_role.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <map>

#include "agent/files_share.h"
#include "agent/transfer_ops.h"
#include "core/error.h"
#include "probe/cpu.h"
#include "transfer/driver.h"

namespace cp::agent {
namespace {

uint32_t block_of(uint64_t block) {
  if (block < 4096 || block > (16u << 20)) {
    throw Error(ErrorKind::kConfig, fmt::format("block size {} is outside 4 KiB .. 16 MiB", block));
  }
  return static_cast<uint32_t>(block);
}

class DriverClientRole : public ClientRole {
 public:
  std::vector<std::string> drivers() const override { return transfer::driver_names(); }
  msg::TransferResult transfer(const msg::TransferRequest& req, const ClientCall& call) override;
  msg::SizeScanResult size_scan(const msg::SizeScanRequest& req, const ClientCall& call) override;
  msg::FilesShareResult files_share(const msg::FilesShareRequest& req,
                                    const ClientCall& call) override;
  void close_shares() override { shares_.clear(); }
  void cancel_sessions() override { sessions_cancel_.cancel(); }

 private:
  transfer::Session& session_for(const msg::ShareRef& share, const CancelToken& cancel);

  struct OpenShare {
    std::string url;
    std::unique_ptr<transfer::Driver> driver;
    std::unique_ptr<transfer::Session> session;
  };
  std::map<std::string, OpenShare> shares_;  // by share name: one login per run
  CancelToken sessions_cancel_;              // for driver sessions; set at shutdown
};

transfer::Share share_of(const msg::ShareRef& share) {
  transfer::Share s;
  s.name = share.name;
  s.url = share.url;
  s.user = share.user;
  s.password = share.password;  // never logged or echoed
  for (const auto& [k, v] : share.options) s.options[k] = v;
  return s;
}

transfer::Session& DriverClientRole::session_for(const msg::ShareRef& share,
                                                 const CancelToken& cancel) {
  auto it = shares_.find(share.name);
  if (it != shares_.end() && it->second.url == share.url) return *it->second.session;
  const transfer::Share s = share_of(share);
  OpenShare open;
  open.url = share.url;
  open.driver = transfer::make_driver(share.driver);
  // Sessions outlive the request that opened them, and drivers may keep the
  // token they are given: hand them the role's own, cancelled at shutdown.
  cancel.check();
  open.session = open.driver->connect(s, sessions_cancel_);
  auto& slot = shares_[share.name];
  slot = std::move(open);
  return *slot.session;
}

msg::TransferResult DriverClientRole::transfer(const msg::TransferRequest& req,
                                               const ClientCall& call) {
  const RunFile& local = call.local;
  transfer::Session& session = session_for(req.share, call.cancel);
  probe::CpuSampler cpu;
  cpu.start();
  FileResult r;
  if (req.op == "read") {
    r = transfer_read(session, req.remote, local, req.size, block_of(req.block), call.cancel,
                      call.progress);
  } else if (req.op == "write") {
    r = transfer_write(session, local, req.remote, block_of(req.block), call.cancel, call.progress);
  } else {
    throw Error(ErrorKind::kPeer, "message 'transfer': field 'op' must be read or write");
  }
  if (req.delete_after) ::unlinkat(local.dir_fd, local.name.c_str(), 0);
  msg::TransferResult out;
  out.bytes = r.bytes;
  out.seconds = r.seconds;
  out.checksum = r.checksum;
  for (const auto& [k, v] : session.properties()) out.properties[k] = v;
  out.cpu = cpu.stop();
  return out;
}

msg::SizeScanResult DriverClientRole::size_scan(const msg::SizeScanRequest& req,
                                                const ClientCall& call) {
  const ScanPattern pattern = parse_scan_pattern(req.pattern);
  // What the driver can do is its table's word (transfer/driver.h), before any connection.
  const bool write = pattern == ScanPattern::kSeqWrite || pattern == ScanPattern::kRandWrite;
  const bool random = pattern == ScanPattern::kRandRead || pattern == ScanPattern::kRandWrite;
  if (const char* lacks = transfer::driver_spec(req.share.driver).caps.lacks(write, random)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("the {} driver has no {}", req.share.driver, lacks),
                "`chokepoint drivers` lists what each driver does");
  }
  transfer::Session& session = session_for(req.share, call.cancel);
  if (req.request == 0 || req.request > (16u << 20)) {
    throw Error(ErrorKind::kConfig, "size-scan request size is outside 1 B .. 16 MiB");
  }
  probe::CpuSampler cpu;
  cpu.start();
  FileResult r = scan_cell(session, req.remote, pattern, static_cast<uint32_t>(req.request),
                           req.bytes, req.file_size, call.cancel);
  return {r.bytes, r.seconds, r.checksum, cpu.stop()};
}

// The share's session, and for operations in flight more of its own (each a
// connection, logged out when the pass ends).
msg::FilesShareResult DriverClientRole::files_share(const msg::FilesShareRequest& req,
                                                    const ClientCall& call) {
  transfer::Session& session = session_for(req.share, call.cancel);
  const transfer::Share s = share_of(req.share);
  auto driver = transfer::make_driver(req.share.driver);
  auto more = [&]() { return driver->connect(s, sessions_cancel_); };
  return run_files_share(req, session, more, call.cancel);
}

}  // namespace

std::unique_ptr<ClientRole> make_client_role() { return std::make_unique<DriverClientRole>(); }

}  // namespace cp::agent
