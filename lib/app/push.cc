#include "app/push.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "report/openmetrics.h"

namespace cp::app {
namespace {

// RFC 4648 base64url without padding ("=" alone for the empty value, as the
// Pushgateway asks).
std::string base64url(const std::string& in) {
  if (in.empty()) return "=";
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3f];
  return out;
}

// What the gateway said, kept short: its body is for people, and a hostile
// one must not flood the terminal.
size_t keep_reply(char* data, size_t size, size_t n, void* user) {
  auto* reply = static_cast<std::string*>(user);
  const size_t bytes = size * n;
  if (reply->size() < 512) reply->append(data, std::min(bytes, 512 - reply->size()));
  return bytes;
}

}  // namespace

std::string pushgateway_group_url(const std::string& base, const std::string& server,
                                  const std::string& client) {
  if (base.find("/metrics/job/") != std::string::npos) return base;
  std::string root = base;
  while (!root.empty() && root.back() == '/') root.pop_back();
  return fmt::format("{}/metrics/job/chokepoint/instance@base64/{}/client@base64/{}", root,
                     base64url(server), base64url(client));
}

void check_push_url(const std::string& base) {
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
    throw Error(ErrorKind::kUsage, fmt::format("--push '{}' is not an http(s) URL", base),
                "name the Pushgateway like --push http://pushgateway:9091");
  }
}

std::string push_run(const stored::Run& run, const analysis::Analysis& a, const std::string& base) {
  check_push_url(base);
  const std::string url = pushgateway_group_url(base, run.server, run.client);
  push_metrics(url, report::export_openmetrics(run, a, {.eof = false}));
  return url;
}

void push_metrics(const std::string& url, const std::string& body, double timeout_s) {
  check_push_url(url);
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw Error(ErrorKind::kIo, "cannot start libcurl to push the metrics");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(
      curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8"),
      curl_slist_free_all);
  std::string reply;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_reply);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot push the metrics to {}: {}", url, curl_easy_strerror(rc)),
                "check that the Pushgateway runs there (it listens on :9091 by default); the "
                "run itself is stored: `chokepoint export latest --format openmetrics`");
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    throw Error(
        ErrorKind::kIo,
        fmt::format("the Pushgateway at {} refused the metrics (HTTP {}): {}", url, status, reply),
        "the run is stored; retry with `chokepoint export latest --format openmetrics` "
        "and curl, or check the gateway's log");
  }
}

}  // namespace cp::app
