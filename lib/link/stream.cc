#include "link/stream.h"

#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>

#include "core/error.h"

namespace cp::remote {
namespace {

class FdStream : public ByteStream {
 public:
  FdStream(int r, int w, std::string name) : r_(r), w_(w), name_(std::move(name)) {}
  ~FdStream() override {
    if (r_ >= 0) close(r_);
    if (w_ >= 0 && w_ != r_) close(w_);
  }

  ReadResult read(char* buf, size_t size, double timeout_s) override {
    pollfd p{r_, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (rc < 0 && errno == EINTR) return {};
    if (rc <= 0) return {};
    ssize_t n = ::read(r_, buf, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return {};
    if (n <= 0) return {0, true};
    return {static_cast<size_t>(n), false};
  }

  void write(std::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::write(w_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw Error(ErrorKind::kRemote, fmt::format("{}: the agent's channel is closed ({})", name_,
                                                    errno_text(errno)));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

 private:
  int r_, w_;
  std::string name_;
};

}  // namespace

std::unique_ptr<ByteStream> make_fd_stream(int read_fd, int write_fd, std::string name) {
  return std::make_unique<FdStream>(read_fd, write_fd, std::move(name));
}

}  // namespace cp::remote
