#include "transfer/afp/testing/afp_replay_peer.h"

#include <fmt/format.h>

#include <stdexcept>

#include "transfer/afp/afp_codec.h"

namespace cp::transfer::testing {
namespace {

std::string key_of(const dsi::Message& m) {
  dsi::Header h = m.header;
  h.request_id = 0;
  return dsi::encode_message(h, m.payload);
}

std::string name_of(const dsi::Message& m) {
  std::string s = dsi::command_name(m.header.command);
  if ((m.header.command == dsi::kCommand || m.header.command == dsi::kWrite) &&
      !m.payload.empty()) {
    s += " " + afp::command_name(static_cast<uint8_t>(m.payload[0]));
  }
  return s;
}

}  // namespace

ReplayPeer::ReplayPeer(const std::vector<CapturedConnection>& captures,
                       std::set<uint8_t> synthesize)
    : synthesize_(std::move(synthesize)) {
  for (const auto& c : captures) {
    for (const auto& e : c.exchanges) {
      Entry& entry = pool_[key_of(e.request)];
      if (e.reply) entry.replies.push_back(*e.reply);
    }
  }
  server_ = std::make_unique<LoopbackServer>(
      [this](int fd, const std::atomic<bool>& stop) { serve(fd, stop); });
}

ReplayPeer::Report ReplayPeer::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

ReplayPeer::Report ReplayPeer::report_after(size_t connections) const {
  if (!server_->wait_served(connections)) {
    throw std::runtime_error("replay peer: the client never closed its connections");
  }
  return report();
}

void ReplayPeer::serve(int fd, const std::atomic<bool>& stop) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++report_.connections;
  }
  dsi::StreamDecoder decoder(64u << 20);
  dsi::Message m;
  while (read_message(fd, decoder, stop, &m) == ReadResult::kMessage) {
    std::unique_lock<std::mutex> lock(mu_);
    const std::string name = name_of(m);
    if (m.header.command == dsi::kTickle) {
      ++report_.tickles;
      report_.log.push_back(name);
      continue;
    }
    auto it = pool_.find(key_of(m));
    if (m.header.command == dsi::kCloseSession) {
      if (it != pool_.end()) {
        ++report_.matched;
      } else {
        report_.synthesized.push_back(name);
      }
      report_.log.push_back(name + ": end");
      return;
    }
    dsi::Message reply;
    if (it != pool_.end() && !it->second.replies.empty()) {
      Entry& e = it->second;
      reply = e.replies[std::min(e.used, e.replies.size() - 1)];
      ++e.used;
      ++report_.matched;
      report_.log.push_back(name + ": captured");
    } else if (m.header.command == dsi::kCommand && !m.payload.empty() &&
               synthesize_.count(static_cast<uint8_t>(m.payload[0]))) {
      reply.header.flags = dsi::kReply;
      reply.header.command = m.header.command;
      report_.synthesized.push_back(afp::command_name(static_cast<uint8_t>(m.payload[0])));
      report_.log.push_back(name + ": synthesized");
    } else {
      report_.unmatched.push_back(hex(dsi::encode_message(m.header, m.payload)));
      report_.log.push_back(name + ": UNMATCHED");
      return;
    }
    lock.unlock();
    reply.header.request_id = m.header.request_id;
    if (!write_all(fd, dsi::encode_message(reply.header, reply.payload))) return;
  }
}

}  // namespace cp::transfer::testing
