#include "probe/io_buffer.h"
#include "probe/platform.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

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

bool IoBuffer::huge_backed() const { return os::huge_page_backed(data_, mapped_); }

long anon_huge_kib(std::istream& smaps, uintptr_t start) {
  // A mapping's header line is "start-end perms offset dev inode [path]"; its fields
  // ("Name:   value kB") follow until the next header.
  bool in_mapping = false;
  std::string line;
  while (std::getline(smaps, line)) {
    const size_t dash = line.find('-');
    if (dash != std::string::npos && dash > 0 &&
        line.find_first_not_of("0123456789abcdef") == dash) {
      if (in_mapping) return 0;  // its fields had no AnonHugePages line
      in_mapping = std::stoull(line.substr(0, dash), nullptr, 16) == start;
      continue;
    }
    if (in_mapping && line.rfind("AnonHugePages:", 0) == 0) {
      return std::strtol(line.c_str() + 14, nullptr, 10);
    }
  }
  return in_mapping ? 0 : -1;
}

}  // namespace cp::probe
