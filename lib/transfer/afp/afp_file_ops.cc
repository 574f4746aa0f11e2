// The afp driver's small-file operations in flight on its one DSI connection
// (Session::run_file_ops; docs/small-files.md, "In flight"). DSI numbers
// each request, so several files' requests can be out at once; each file's
// chain is the one the synchronous calls make (afp.cc: open, write, close;
// stat; remove), one request of a chain out at a time (the next needs the
// answer: the fork a FPOpenFork returns). Servers answer a session's
// requests in the order they came (netatalk serves a session from one
// process, one request after another), so the oldest request's answer is
// the one waited for.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <memory>
#include <vector>

#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_link.h"
#include "transfer/share_url.h"

namespace cp::transfer::afp {
namespace {

// The request of a chain on the wire.
enum class Step { kCreate, kOpen, kWrite, kFlush, kRead, kClose, kStat, kDelete };

struct Chain {
  uint64_t id = 0;
  std::string rel;   // the pass's path, for messages
  std::string path;  // the volume's
  Step step = Step::kCreate;
  uint16_t fork = 0;
  bool fork_open = false;
  uint64_t done = 0;         // bytes written or read so far
  uint64_t asked = 0;        // the request on the wire: its bytes
  bool eof = false;          // reads: the server said the file ends
  std::vector<char> buf;     // reads: the bytes (up to the data's size + 1)
  std::exception_ptr error;  // the chain's first failure
};

class Engine {
 public:
  Engine(Link& link, const std::function<std::string(const std::string&)>& afp_path, FileOps& ops)
      : link_(link), afp_path_(afp_path), ops_(ops), slots_(std::max(1u, ops.depth)) {}

  void run() {
    bool more = true;
    for (;;) {
      while (more && active_ < slots_.size()) more = start();
      if (pending_.empty()) return;
      const auto [slot, request] = pending_.front();
      pending_.pop_front();
      answer(slot, request);
    }
  }

 private:
  // Starts the next file's chain in a free slot; false when there is none.
  bool start() {
    uint64_t id = 0;
    std::string rel;
    if (!ops_.next(id, rel)) return false;
    size_t slot = 0;
    while (slots_[slot]) ++slot;
    slots_[slot] = std::make_unique<Chain>();
    Chain& c = *slots_[slot];
    ++active_;
    c.id = id;
    c.rel = rel;
    try {
      check_relative_path(rel);
      c.path = afp_path_(rel);
    } catch (const Error&) {
      c.error = std::current_exception();
      end(slot);
      return true;
    }
    const uint16_t v = link_.volume;
    switch (ops_.op) {
      case FileOp::kCreate:
        // Soft: the pass's files are new, so one that exists is an error.
        send(slot, Step::kCreate, encode_create_file(v, kRootDirID, false, c.path));
        break;
      case FileOp::kStat:
        send(slot, Step::kStat,
             encode_get_file_dir_parms(v, kRootDirID, kStatFileBitmap, kStatDirBitmap, c.path));
        break;
      case FileOp::kRead:
        send(slot, Step::kOpen, encode_open_fork(v, kRootDirID, 0, kAccessRead, c.path));
        break;
      case FileOp::kRemove:
        send(slot, Step::kDelete, encode_delete(v, kRootDirID, c.path));
        break;
    }
    return true;
  }

  void send(size_t slot, Step step, std::string_view afp) {
    slots_[slot]->step = step;
    pending_.push_back({slot, link_.conn->send_command(afp)});
  }

  // The answer to `slot`'s request: the chain's next request, or its end.
  // A failed answer ends the chain with its error (its fork closed first);
  // a broken connection throws out of run().
  void answer(size_t slot, uint16_t request) {
    Chain& c = *slots_[slot];
    if (c.step == Step::kRead) return answer_read(slot, request);
    dsi::Message m = link_.conn->wait(request);
    const int32_t code = m.header.error();
    if (c.error) return end(slot);  // the close after a failure: its answer does not matter
    if (code != kNoErr) return fail(slot, afp_error(code, command_of(c.step), link_.at(c.rel)));
    try {
      next(slot, m.payload);
    } catch (const Error& e) {
      fail(slot, e);
    }
  }

  void next(size_t slot, const std::string& payload) {
    Chain& c = *slots_[slot];
    switch (c.step) {
      case Step::kCreate:
        send(slot, Step::kOpen,
             encode_open_fork(link_.volume, kRootDirID, 0, kAccessRead | kAccessWrite, c.path));
        return;
      case Step::kOpen:
        c.fork = decode_open_fork(payload).fork;
        c.fork_open = true;
        if (ops_.op == FileOp::kRead) {
          c.buf.resize(ops_.data.size() + 1);  // a byte more: a longer file shows
          return ask_read(slot);
        }
        return write_or_flush(slot);
      case Step::kWrite: {
        const uint64_t last = decode_write_ext(payload);
        if (last != c.done + c.asked) {
          throw Error(ErrorKind::kIo,
                      fmt::format("AFP server {} wrote {} only up to byte {} of {}",
                                  link_.where.server, c.rel, last, c.done + c.asked),
                      "the server's disk may be full; check its free space and log");
        }
        c.done += c.asked;
        return write_or_flush(slot);
      }
      case Step::kFlush:
        return close(slot);
      case Step::kClose:
        c.fork_open = false;
        return end(slot);
      case Step::kStat:
      case Step::kDelete:
        return end(slot);
      case Step::kRead:
        break;
    }
    CP_CHECK(false);
  }

  // Writes the file's next request's worth, or flushes once all is out.
  void write_or_flush(size_t slot) {
    Chain& c = *slots_[slot];
    if (c.done == ops_.data.size()) {
      send(slot, Step::kFlush, encode_flush_fork(c.fork));
      return;
    }
    c.asked = std::min<uint64_t>(link_.request_size, ops_.data.size() - c.done);
    c.step = Step::kWrite;
    const std::string_view bytes(ops_.data.data() + c.done, c.asked);
    pending_.push_back(
        {slot, link_.conn->send_write(encode_write_ext_header(c.fork, c.done, c.asked), bytes)});
  }

  void ask_read(size_t slot) {
    Chain& c = *slots_[slot];
    c.asked = std::min<uint64_t>(link_.request_size, c.buf.size() - c.done);
    send(slot, Step::kRead, encode_read_ext(c.fork, c.done, c.asked));
  }

  // A read's answer lands in the chain's buffer; more is asked until the
  // server says the file ends or the buffer (the data's size + 1) is full.
  void answer_read(size_t slot, uint16_t request) {
    Chain& c = *slots_[slot];
    const dsi::Header h = link_.conn->wait_into(request, c.buf.data() + c.done, c.asked);
    const int32_t code = h.error();
    if (code != kNoErr && code != kFPEOFErr) {
      return fail(slot, afp_error(code, kFPReadExt, link_.at(c.rel)));
    }
    c.done += h.length;
    c.eof = code == kFPEOFErr;
    if (!c.eof && h.length == 0) {
      return fail(slot, Error(ErrorKind::kPeer,
                              fmt::format("AFP server {} answered an FPReadExt of {} with no data "
                                          "and no end of file",
                                          link_.where.server, c.rel),
                              "the server broke the protocol; report it with a packet capture"));
    }
    if (c.eof || c.done == c.buf.size()) return close(slot);
    ask_read(slot);
  }

  void close(size_t slot) { send(slot, Step::kClose, encode_close_fork(slots_[slot]->fork)); }

  // The chain failed: closes its fork if one is open (the answer is not
  // waited on for its own sake), then ends it with the error.
  void fail(size_t slot, const Error& e) {
    Chain& c = *slots_[slot];
    c.error = std::make_exception_ptr(e);
    if (c.fork_open) {
      c.fork_open = false;
      send(slot, Step::kClose, encode_close_fork(c.fork));
      return;
    }
    end(slot);
  }

  void end(size_t slot) {
    std::unique_ptr<Chain> c = std::move(slots_[slot]);
    --active_;
    const std::span<const char> got = ops_.op == FileOp::kRead && !c->error
                                          ? std::span<const char>(c->buf.data(), c->done)
                                          : std::span<const char>();
    ops_.ended(c->id, got, c->error);
  }

  // The AFP command each step sends, in Step's order (for error messages).
  static uint8_t command_of(Step s) {
    static constexpr uint8_t kCommands[] = {kFPCreateFile,      kFPOpenFork, kFPWriteExt,
                                            kFPFlushFork,       kFPReadExt,  kFPCloseFork,
                                            kFPGetFileDirParms, kFPDelete};
    return kCommands[static_cast<size_t>(s)];
  }

  Link& link_;
  const std::function<std::string(const std::string&)>& afp_path_;
  FileOps& ops_;
  std::vector<std::unique_ptr<Chain>> slots_;  // a chain per operation in flight
  size_t active_ = 0;
  // Requests on the wire, oldest first: the chain's slot and the DSI id.
  std::deque<std::pair<size_t, uint16_t>> pending_;
};

}  // namespace

void run_file_ops(Link& link, const std::function<std::string(const std::string&)>& afp_path,
                  FileOps& ops) {
  Engine(link, afp_path, ops).run();
}

}  // namespace cp::transfer::afp
