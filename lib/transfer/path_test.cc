#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/testing/scratch_dir.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

namespace fs = std::filesystem;

class PathDriverTest : public ::testing::Test {
 protected:
  std::unique_ptr<Session> connect(const std::string& url) {
    Share s;
    s.url = url;
    return driver_->connect(s, cancel_);
  }
  testing::ScratchDir scratch_{"cp-path-test"};
  const fs::path dir_ = scratch_.path();
  std::unique_ptr<Driver> driver_ = make_driver("path");
  CancelToken cancel_;
};

TEST_F(PathDriverTest, WritesReadsAndRemovesThroughTheMount) {
  auto s = connect(dir_.string());
  std::string data(300000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 1000);
  auto w = s->open("run-1/sub/a.dat", Mode::kWrite, data.size());
  w->write(data.data(), 100000);
  w->write(data.data() + 100000, data.size() - 100000);
  w->close();
  EXPECT_EQ(fs::file_size(dir_ / "run-1/sub/a.dat"), data.size());

  auto r = s->open("run-1/sub/a.dat", Mode::kRead, data.size());
  std::string got;
  char buf[65536];
  while (size_t n = r->read(buf, sizeof buf)) got.append(buf, n);
  EXPECT_EQ(got, data);
  EXPECT_EQ(r->pread(buf, 10, 123456), 10u);
  EXPECT_EQ(std::string(buf, 10), data.substr(123456, 10));
  r->close();

  auto rw = s->open("run-1/sub/b.dat", Mode::kWrite, 0);
  rw->pwrite("xyz", 3, 4096);
  rw->pwrite("ab", 2, 0);
  rw->close();
  EXPECT_EQ(fs::file_size(dir_ / "run-1/sub/b.dat"), 4099u);
  s->remove("run-1/sub/b.dat");
  s->remove("run-1/sub/a.dat");
  EXPECT_FALSE(fs::exists(dir_ / "run-1/sub/a.dat"));
  s->remove("run-1/sub");  // an empty directory goes too
  EXPECT_FALSE(fs::exists(dir_ / "run-1/sub"));
  EXPECT_THROW(s->remove("run-1/sub"), Error);
  EXPECT_EQ(s->properties().at("root"), dir_.string());
  EXPECT_FALSE(s->properties().at("fstype").empty());
}

TEST_F(PathDriverTest, FileUrlsAndErrors) {
  EXPECT_NO_THROW(connect("file://" + dir_.string()));
  try {
    connect((dir_ / "missing").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(connect("file://otherhost/x"), Error);
  EXPECT_THROW(connect("smb://h/x"), Error);
  std::ofstream(dir_ / "plain") << "x";
  EXPECT_THROW(connect((dir_ / "plain").string()), Error);

  auto s = connect(dir_.string());
  try {
    s->open("nothere.dat", Mode::kRead, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s->open("../escape", Mode::kWrite, 0), Error);
}

// Another user of the share plants links, FIFOs and files at the names a run
// uses: the driver follows no link below the share's root, creates only new
// files and reads only regular ones; each refusal is an I/O error and the
// planted target keeps its bytes.
class SecurityPathDriver : public PathDriverTest {
 protected:
  void SetUp() override {
    PathDriverTest::SetUp();
    outside_ = dir_.string() + "-outside";
    fs::create_directories(outside_);
    std::ofstream(outside_ / "victim") << "not the run's";
    fs::create_directories(dir_ / "run");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(outside_, ec);
    PathDriverTest::TearDown();
  }
  std::string victim() const {
    std::ifstream in(outside_ / "victim");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static ErrorKind kind_of_open(Session& s, const std::string& rel, Mode mode) {
    try {
      s.open(rel, mode, 0);
    } catch (const Error& e) {
      return e.kind();
    }
    ADD_FAILURE() << rel << " opened";
    return ErrorKind::kUsage;
  }
  fs::path outside_;
};

TEST_F(SecurityPathDriver, PlantedLinkAtAFileIsNeitherWrittenNorRead) {
  auto s = connect(dir_.string());
  fs::create_symlink(outside_ / "victim", dir_ / "run" / "x.dat");
  EXPECT_EQ(kind_of_open(*s, "run/x.dat", Mode::kWrite), ErrorKind::kIo);
  EXPECT_EQ(kind_of_open(*s, "run/x.dat", Mode::kRead), ErrorKind::kIo);
  s->remove("run/x.dat");  // the link goes, its target stays
  EXPECT_FALSE(fs::is_symlink(dir_ / "run" / "x.dat"));
  EXPECT_EQ(victim(), "not the run's");
}

TEST_F(SecurityPathDriver, PlantedLinkAsADirectoryIsNotFollowed) {
  auto s = connect(dir_.string());
  fs::create_symlink(outside_, dir_ / "run" / "sub");
  EXPECT_EQ(kind_of_open(*s, "run/sub/new.dat", Mode::kWrite), ErrorKind::kIo);
  EXPECT_EQ(kind_of_open(*s, "run/sub/victim", Mode::kRead), ErrorKind::kIo);
  EXPECT_THROW(s->remove("run/sub/victim"), Error);
  EXPECT_FALSE(fs::exists(outside_ / "new.dat"));
  EXPECT_EQ(victim(), "not the run's");
}

TEST_F(SecurityPathDriver, PlantedFifoOrFileIsRefused) {
  auto s = connect(dir_.string());
  ASSERT_EQ(::mkfifo((dir_ / "run" / "f.dat").c_str(), 0666), 0);
  // Without O_NONBLOCK this open would wait for a writer forever.
  EXPECT_EQ(kind_of_open(*s, "run/f.dat", Mode::kRead), ErrorKind::kIo);
  std::ofstream(dir_ / "run" / "planted.dat") << "planted";
  EXPECT_EQ(kind_of_open(*s, "run/planted.dat", Mode::kWrite), ErrorKind::kIo);
  EXPECT_EQ(fs::file_size(dir_ / "run" / "planted.dat"), 7u);  // not truncated
}

TEST(PathError, MapsErrno) {
  const Place w{"", "/mnt/nas", "", "run-1/a.dat"};
  EXPECT_NE(std::string(path_error(ENOSPC, Step::kClose, w).what()).find("is full"),
            std::string::npos);
  EXPECT_NE(std::string(path_error(EROFS, Step::kOpenWrite, w).what()).find("read-only"),
            std::string::npos);
  EXPECT_NE(std::string(path_error(EACCES, Step::kOpenWrite, w).what()).find("refuses writes"),
            std::string::npos);
  EXPECT_NE(std::string(path_error(ENOENT, Step::kConnect, w).what()).find("no directory"),
            std::string::npos);
}

}  // namespace
}  // namespace cp::transfer
