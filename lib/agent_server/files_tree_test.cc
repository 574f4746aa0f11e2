// The server agent's part of the small-file pass over a share: a tree laid
// out in a run directory, dropped from the cache, removed.
#include "agent_server/files_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/testing/scratch_dir.h"

namespace cp::agent {
namespace {

namespace fs = std::filesystem;

class FilesTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override { ::close(fd_); }
  RunFile at() const { return {fd_, "tree", (dir_ / "tree").string()}; }
  testing::ScratchDir scratch_{"cp-files-tree-test"};
  const fs::path dir_ = scratch_.path();
  int fd_ = -1;
  CancelToken cancel_;
};

TEST_F(FilesTreeTest, LaysOutDropsAndRemovesTheTreeThePassNames) {
  const files::Tree tree{.count = 25, .size = 3000, .dirs = 4};
  const msg::FilesTreeResult made = lay_out_tree(at(), tree, cancel_);
  EXPECT_EQ(made.files, 25u);
  EXPECT_EQ(made.bytes, 25u * 3000);
  for (uint64_t i = 0; i < tree.count; ++i) {
    EXPECT_EQ(fs::file_size(dir_ / "tree" / tree.file_path(i)), 3000u) << i;
  }
  EXPECT_EQ(fs::status(dir_ / "tree" / "d0001").permissions() & fs::perms::all, fs::perms(0755));
  // A second layout of the same name is refused: never an existing tree.
  try {
    lay_out_tree(at(), tree, cancel_);
    ADD_FAILURE() << "laid out twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
  // A file the client removed already is skipped by drop and remove.
  fs::remove(dir_ / "tree" / tree.file_path(7));
  EXPECT_EQ(drop_tree(at(), tree, cancel_).files, 24u);
  EXPECT_EQ(remove_tree(at(), tree).files, 24u);
  EXPECT_FALSE(fs::exists(dir_ / "tree"));
  EXPECT_EQ(remove_tree(at(), tree).files, 0u);  // nothing left: fine
}

TEST_F(FilesTreeTest, ATreeOutsideItsRangesIsAPeerError) {
  for (const files::Tree& t : {files::Tree{.count = 0, .size = 1, .dirs = 1},
                               files::Tree{.count = 10, .size = (1u << 20) + 1, .dirs = 1},
                               files::Tree{.count = 2'000'000, .size = 1, .dirs = 1}}) {
    try {
      lay_out_tree(at(), t, cancel_);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "tree"));
}

}  // namespace
}  // namespace cp::agent
