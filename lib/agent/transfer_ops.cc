#include "agent/transfer_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"

namespace cp::agent {
namespace {

using fileio::Fd;
using fileio::read_some;
using fileio::Unlinker;
using fileio::write_all;

class Ticker {
 public:
  Ticker(const ProgressFn& fn, double start) : fn_(fn), start_(start), last_(start) {}
  void tick(uint64_t bytes) {
    if (!fn_) return;
    const double now = monotonic_seconds();
    if (now - last_ < 0.25) return;
    last_ = now;
    fn_(bytes, now - start_);
  }

 private:
  const ProgressFn& fn_;
  double start_, last_;
};

}  // namespace

FileResult transfer_read(transfer::Session& session, const std::string& remote,
                         const RunFile& local, uint64_t size_hint, uint32_t block,
                         const CancelToken& cancel, const ProgressFn& progress) {
  Fd out(local, O_WRONLY, 0600);
  Unlinker guard{local};
  std::vector<char> buf(block);
  Checksum sum;
  FileResult r;
  const double start = monotonic_seconds();
  Ticker ticker(progress, start);
  auto file = session.open(remote, transfer::Mode::kRead, size_hint);
  for (;;) {
    cancel.check();
    const size_t n = file->read(buf.data(), buf.size());
    if (n == 0) break;
    sum.update(buf.data(), n);
    write_all(out.get(), buf.data(), n, local.path);
    r.bytes += n;
    ticker.tick(r.bytes);
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  guard.armed = false;
  return r;
}

FileResult transfer_write(transfer::Session& session, const RunFile& local,
                          const std::string& remote, uint32_t block, const CancelToken& cancel,
                          const ProgressFn& progress) {
  Fd in(local);
  Checksum sum;
  FileResult r;
  const off_t size = ::lseek(in.get(), 0, SEEK_END);
  ::lseek(in.get(), 0, SEEK_SET);
  const double start = monotonic_seconds();
  Ticker ticker(progress, start);
  auto file = session.open(remote, transfer::Mode::kWrite, static_cast<uint64_t>(size));
  // The local file is read straight into the driver's request buffers
  // (write_buffer), as a copy program's read-then-send would.
  for (;;) {
    cancel.check();
    const std::span<char> room = file->write_buffer(block);
    const size_t n = read_some(in.get(), room.data(), room.size(), local.path);
    if (n == 0) break;
    sum.update(room.data(), n);
    file->commit_write(n);
    r.bytes += n;
    ticker.tick(r.bytes);
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  r.checksum = sum.hex();
  return r;
}

ScanPattern parse_scan_pattern(const std::string& name) {
  if (name == "seqread") return ScanPattern::kSeqRead;
  if (name == "randread") return ScanPattern::kRandRead;
  if (name == "seqwrite") return ScanPattern::kSeqWrite;
  if (name == "randwrite") return ScanPattern::kRandWrite;
  throw Error(ErrorKind::kPeer, fmt::format("message 'sweep': unknown pattern '{}'", name));
}

FileResult scan_cell(transfer::Session& session, const std::string& remote, ScanPattern pattern,
                     uint32_t request, uint64_t total, uint64_t file_size,
                     const CancelToken& cancel) {
  CP_CHECK(request > 0);
  if (file_size < request) {
    throw Error(ErrorKind::kConfig,
                fmt::format("size-scan file of {} bytes is smaller than a {} byte "
                            "request",
                            file_size, request));
  }
  const bool write = pattern == ScanPattern::kSeqWrite || pattern == ScanPattern::kRandWrite;
  const bool random = pattern == ScanPattern::kRandRead || pattern == ScanPattern::kRandWrite;
  std::vector<char> buf(request);
  if (write) fill_pattern(buf.data(), buf.size(), pattern_seed(remote), 0);
  const uint64_t slots = file_size / request;
  uint64_t state = pattern_seed(remote) | 1;  // xorshift64: deterministic offsets
  auto next_offset = [&]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (state % slots) * request;
  };
  FileResult r;
  const double start = monotonic_seconds();
  auto file = session.open(remote, write ? transfer::Mode::kWrite : transfer::Mode::kRead,
                           write ? file_size : 0);
  while (r.bytes < total) {
    cancel.check();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(request, total - r.bytes));
    if (write) {
      if (random)
        file->pwrite(buf.data(), n, next_offset());
      else
        file->write(buf.data(), n);
      r.bytes += n;
      continue;
    }
    size_t got;
    if (random) {
      got = file->pread(buf.data(), n, next_offset());
    } else {
      got = file->read(buf.data(), n);
    }
    if (got == 0) break;  // a sequential read hit the end of the file
    r.bytes += got;
  }
  file->close();
  r.seconds = monotonic_seconds() - start;
  return r;
}

}  // namespace cp::agent
