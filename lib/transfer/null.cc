// The null driver: tests the transfer framework without a network. Reads
// yield the size the caller expects (else the `size` option, default 1 MiB)
// of a fixed pattern; writes are counted and discarded. Like fio's null engine, it measures only
// the framework's own cost.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/option_table.h"
#include "transfer/registry.h"

namespace cp::transfer {
namespace {

class NullFile : public File {
 public:
  NullFile(Mode mode, uint64_t size) : mode_(mode), left_(size) {}
  size_t read(char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kRead);
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, left_));
    std::memset(buf, 0x5a, k);
    left_ -= k;
    return k;
  }
  void write(const char*, size_t n) override {
    CP_CHECK(mode_ == Mode::kWrite);
    written_ += n;
  }
  void close() override {}

 private:
  Mode mode_;
  uint64_t left_;
  uint64_t written_ = 0;
};

class NullSession : public Session {
 public:
  explicit NullSession(uint64_t size) : size_(size) {}
  std::unique_ptr<File> open(const std::string&, Mode mode, uint64_t size_hint) override {
    return std::make_unique<NullFile>(mode, size_hint ? size_hint : size_);
  }
  void remove(const std::string&) override {}
  // Nothing is kept: a stat tells the size a read would give.
  FileInfo stat(const std::string&) override { return {.size = size_}; }
  void mkdir(const std::string&) override {}
  void rmdir(const std::string&) override {}
  std::map<std::string, std::string> properties() const override {
    return {{"size", std::to_string(size_)}};
  }

 private:
  uint64_t size_;
};

class NullDriver : public Driver {
 public:
  std::string name() const override { return "null"; }
  std::unique_ptr<Session> connect(const Share& share, const CancelToken&) override {
    uint64_t size = 1u << 20;
    if (auto it = share.options.find("size"); it != share.options.end()) {
      size = parse_size(it->second, "null driver option 'size'");
    }
    return std::make_unique<NullSession>(size);
  }
};

}  // namespace

namespace {
constexpr std::string_view kNullPrefixes[] = {"null:"};
constexpr OptionSpec kNullOptions[] = {
    option::size("size", "1MiB", 0, 0, "bytes a file read holds when the reader expects no size"),
};
std::unique_ptr<Driver> make() { return std::make_unique<NullDriver>(); }
}  // namespace

const DriverSpec kNullDriver = {
    .name = "null",
    .summary = "no I/O: the framework's own cost (like fio's null engine)",
    .url_prefixes = kNullPrefixes,
    .caps = {.stat = true, .mkdir = true, .max_in_flight = 64, .keeps_data = false},
    .options = kNullOptions,
    .make = make,
    .display = "NULL",
    .server_files = false,
};

}  // namespace cp::transfer
