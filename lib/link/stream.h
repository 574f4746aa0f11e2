// A byte stream to an agent: an SSH exec channel or a local child's pipes.
// An interface so tests can put a socketpair (or a fake) in its place.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace cp::remote {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  struct ReadResult {
    size_t n = 0;      // bytes read; 0 with eof false means the wait timed out
    bool eof = false;  // the other end closed
  };
  // Reads up to `size` bytes, waiting at most timeout_s seconds.
  virtual ReadResult read(char* buf, size_t size, double timeout_s) = 0;
  // Writes all of `data`; throws Error(kRemote) when the stream is closed.
  virtual void write(std::string_view data) = 0;
  // What the far side printed on stderr so far (for error messages), if known.
  virtual std::string stderr_text() { return {}; }
};

// A stream over two file descriptors (read end, write end); it owns them.
std::unique_ptr<ByteStream> make_fd_stream(int read_fd, int write_fd, std::string name);

}  // namespace cp::remote
