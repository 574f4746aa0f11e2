// The one I/O buffer a disk probe reads into and writes from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>

namespace cp::probe {

// Transparent huge page size this buffer aligns to, bytes (the PMD size of x86-64 and of
// arm64 with 4 KiB pages; on other layouts the alignment is merely harmless).
inline constexpr size_t kHugePage = 2u << 20;

// An anonymous, page-aligned (so O_DIRECT-able), pre-faulted buffer. From half a huge
// page up it is placed on a kHugePage boundary, its length rounded up to whole huge
// pages, and offered to transparent huge pages (madvise(MADV_HUGEPAGE)). Why: O_DIRECT
// pins the caller's pages for each request. On small pages a 1 MiB request is 256 of
// them; the block layer merges only the physically contiguous ones into a segment, so a
// device's segment limit (128 on a loop device) splits the request or not depending on
// where the pages landed. On one huge page it is one pin and always one request.
// Measured (README "Benchmarks"): 1 MiB requests every time where fio's default buffer
// gave 512 KiB or 1 MiB from run to run, and 15 ms of probe CPU per GiB read instead of
// 44-48 ms. Without THP in the kernel it is an ordinary buffer. Memory: up to
// kHugePage - 1 bytes above `size`.
class IoBuffer {
 public:
  // Throws std::bad_alloc when the mapping fails; `size` 0 is a bug.
  explicit IoBuffer(size_t size);
  ~IoBuffer();
  IoBuffer(const IoBuffer&) = delete;
  IoBuffer& operator=(const IoBuffer&) = delete;

  unsigned char* data() { return data_; }
  size_t size() const { return size_; }
  // The kernel took the huge page advice (it may still fall back to small pages when
  // it has no free huge page).
  bool huge_advised() const { return huge_advised_; }
  // All of the buffer sits on huge pages now (from /proc/self/smaps; false when unreadable).
  bool huge_backed() const;

 private:
  unsigned char* data_ = nullptr;
  size_t size_;
  size_t mapped_ = 0;  // bytes mapped at data_
  bool huge_advised_ = false;
};

// Pure part of huge_backed(): the AnonHugePages figure, KiB, of the mapping that starts
// at `start` in `smaps` (the format of /proc/PID/smaps); -1 when no mapping starts there.
long anon_huge_kib(std::istream& smaps, uintptr_t start);

}  // namespace cp::probe
