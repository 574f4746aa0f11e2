// TCP with several streams: which TCP row a protocol is held against. A
// protocol over one connection cannot go faster than one stream (its one
// socket, its one thread per end); one that opens several (SMB multichannel
// connections, a kernel NFS mount's nconnect) is held against the total of
// as many streams at once.
#include <cstdlib>
#include <string>

#include "analysis/judge.h"

namespace cp::analysis {
namespace {

// "nconnect=4" within mount options "rw,vers=4.2,nconnect=4": 4; 0 none.
int option_count(const std::string& options, const std::string& key) {
  size_t at = 0;
  while ((at = options.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || options[at - 1] == ',') return std::atoi(options.c_str() + at + key.size() + 1);
    at += key.size();
  }
  return 0;
}

}  // namespace

int protocol_connections(const Row& r) {
  // chokepoint's SMB driver: the connections its session opened.
  if (auto it = r.properties.find("connections"); it != r.properties.end()) {
    return std::max(1, std::atoi(it->second.c_str()));
  }
  // A kernel mount (the path driver): NFS's nconnect, CIFS's max_channels
  // with multichannel. NFS over libnfs keeps its depth of requests in flight
  // on one connection: one stream.
  if (auto it = r.properties.find("mount_options"); it != r.properties.end()) {
    const std::string& o = it->second;
    if (const int n = option_count(o, "nconnect"); n > 1) return n;
    if (o.find("multichannel") != std::string::npos) {
      if (const int n = option_count(o, "max_channels"); n > 1) return n;
    }
  }
  return 1;
}

const Row* tcp_total_row(const std::vector<Row>& rows, const std::string& where, int at_most) {
  const Row* best = nullptr;
  for (const Row& r : rows) {
    if (r.layer != "tcp" || r.where != where || r.streams < 2 || r.rate.n == 0) continue;
    if (at_most > 0 && r.streams > at_most) continue;
    if (!best || r.rate.median > best->rate.median) best = &r;
  }
  return best;
}

const Row* tcp_beneath(const std::vector<Row>& rows, const Row& protocol) {
  const std::string where = protocol.op == "read" ? "server->client" : "client->server";
  if (const int n = protocol_connections(protocol); n > 1) {
    if (const Row* total = tcp_total_row(rows, where, n)) return total;
  }
  return tcp_row(rows, where);
}

}  // namespace cp::analysis
