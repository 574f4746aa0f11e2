#include <gtest/gtest.h>

#include "core/error.h"
#include "transfer/driver.h"

namespace cp::transfer {
namespace {

TEST(Registry, ListsNullAndRefusesUnknown) {
  const auto& names = driver_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "null"), names.end());
  try {
    make_driver("gopher");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no transfer driver 'gopher'"), std::string::npos);
    EXPECT_NE(e.hint().find("null"), std::string::npos);
  }
}

TEST(NullDriver, ReadsTheConfiguredSizeAndDiscardsWrites) {
  auto d = make_driver("null");
  EXPECT_EQ(d->name(), "null");
  CancelToken cancel;
  Share share;
  share.options["size"] = "300k";
  auto s = d->connect(share, cancel);
  auto f = s->open("x", Mode::kRead, 0);
  std::vector<char> buf(128 << 10);
  uint64_t total = 0;
  while (size_t n = f->read(buf.data(), buf.size())) total += n;
  EXPECT_EQ(total, 300u << 10);
  f->close();
  auto w = s->open("y", Mode::kWrite, 10);
  w->write(buf.data(), 10);
  w->close();
  EXPECT_THROW(f->pread(buf.data(), 1, 0), Error);
  share.options["size"] = "lots";
  EXPECT_THROW(d->connect(share, cancel), Error);
}

}  // namespace
}  // namespace cp::transfer
