#include "probe/io_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <new>

#include "core/error.h"

namespace cp::probe {
namespace {

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

IoBuffer::IoBuffer(size_t size) : size_(size) {
  CP_CHECK(size > 0);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const bool huge = size >= kHugePage / 2;
  const size_t length = huge ? round_up(size, kHugePage) : round_up(size, page);
  // mmap aligns to a page only: map a huge page more and trim both ends to the boundary.
  const size_t slack = huge ? kHugePage : 0;
  void* p =
      ::mmap(nullptr, length + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = huge ? round_up(base, kHugePage) : base;
  const uintptr_t end = start + length;
  if (start > base) ::munmap(p, start - base);
  if (base + length + slack > end)
    ::munmap(reinterpret_cast<void*>(end), base + length + slack - end);
  data_ = reinterpret_cast<unsigned char*>(start);
  mapped_ = length;
  if (huge) huge_advised_ = ::madvise(data_, mapped_, MADV_HUGEPAGE) == 0;
  // Fault the pages in now, so the first timed request does not pay for it.
  std::memset(data_, 0, mapped_);
}

IoBuffer::~IoBuffer() { ::munmap(data_, mapped_); }

}  // namespace cp::probe
