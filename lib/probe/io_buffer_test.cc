#include "probe/io_buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <cstdlib>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace cp::probe {
namespace {

uintptr_t address(IoBuffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }

// The kernel's THP mode: "always", "madvise", "never", or "" without THP support.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

TEST(IoBuffer, SmallBuffersArePageAlignedAndZeroed) {
  for (size_t size : {size_t{4096}, size_t{12288}, size_t{256} << 10}) {
    IoBuffer b(size);
    EXPECT_EQ(b.size(), size);
    EXPECT_EQ(address(b) % 4096, 0u) << size;
    EXPECT_FALSE(b.huge_advised()) << size;
    for (size_t i = 0; i < size; i += 1000) ASSERT_EQ(b.data()[i], 0) << i;
    std::memset(b.data(), 0xA5, size);  // all of it is writable
  }
}

TEST(IoBuffer, LargeBuffersStartOnAHugePageBoundary) {
  for (size_t size : {kHugePage / 2, size_t{1} << 20, kHugePage, 3 * kHugePage + 4096}) {
    IoBuffer b(size);
    EXPECT_EQ(b.size(), size);
    EXPECT_EQ(address(b) % kHugePage, 0u) << size;
    EXPECT_EQ(b.data()[size - 1], 0) << size;
    std::memset(b.data(), 0x5A, size);
  }
}

TEST(IoBuffer, HugePageAdviceIsTakenWhereTheKernelHasThp) {
  const std::string mode = thp_mode();
  if (mode.empty()) GTEST_SKIP() << "this kernel has no transparent huge pages";
  IoBuffer b(size_t{1} << 20);
  // madvise(MADV_HUGEPAGE) succeeds whatever the mode, when THP is built in.
  EXPECT_TRUE(b.huge_advised()) << "THP mode " << mode;
}

// Virtual memory of this process, KiB (VmSize in /proc/self/status). Read
// into a stack buffer: a heap allocation here could grow or trim the heap and
// move VmSize by itself.
long vm_size_kib() {
  char buf[8192];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* at = std::strstr(buf, "\nVmSize:");
  return at ? std::strtol(at + 8, nullptr, 10) : -1;
}

TEST(IoBuffer, MapsOnlyWhatItUsesAndUnmapsIt) {
  const long before = vm_size_kib();
  ASSERT_GT(before, 0);
  {
    IoBuffer b(size_t{1} << 20);
    // One huge page: the alignment slack was given back.
    EXPECT_EQ(vm_size_kib() - before, static_cast<long>(kHugePage >> 10));
  }
  EXPECT_EQ(vm_size_kib(), before);
  {
    IoBuffer b(12288);
    EXPECT_EQ(vm_size_kib() - before, 12);
  }
  EXPECT_EQ(vm_size_kib(), before);
}

TEST(IoBuffer, AnonHugePagesOfOneMappingFromSmaps) {
  const std::string smaps =
      "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n"
      "Size:               2048 kB\n"
      "AnonHugePages:      2048 kB\n"
      "VmFlags: rd wr mr mw me ac sd hg\n"
      "7f0000200000-7f0000300000 rw-p 00000000 00:00 0 \n"
      "Size:               1024 kB\n"
      "AnonHugePages:         0 kB\n"
      "7f0000400000-7f0000500000 r--p 00000000 fd:01 42                 /usr/lib/x.so\n"
      "Size:               1024 kB\n"
      "VmFlags: rd mr mw me sd\n";
  auto kib = [](const std::string& text, uintptr_t start) {
    std::istringstream in(text);
    return anon_huge_kib(in, start);
  };
  EXPECT_EQ(kib(smaps, 0x7f0000000000), 2048);
  EXPECT_EQ(kib(smaps, 0x7f0000200000), 0);
  EXPECT_EQ(kib(smaps, 0x7f0000400000), 0);   // no such line: none
  EXPECT_EQ(kib(smaps, 0x7f0000100000), -1);  // not the start of a mapping
  EXPECT_EQ(kib("", 0x7f0000000000), -1);
}

TEST(IoBuffer, HugeBackingIsReadFromThisProcess) {
  IoBuffer small(12288);
  EXPECT_FALSE(small.huge_backed());  // small pages only
  IoBuffer big(size_t{1} << 20);
  // With THP on, the kernel may still have had no free huge page: either answer is
  // right then; with it off, only one is.
  if (thp_mode() == "never" || thp_mode().empty()) {
    EXPECT_FALSE(big.huge_backed());
  }
}

}  // namespace
}  // namespace cp::probe
