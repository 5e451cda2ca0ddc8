// config::write_output_file: outputs replace their target through a fresh temporary file, never
// following a name or link that already sits beside it; devices are written in place, a FIFO
// without a reader and other non-files are refused (no hang); a writer that fails leaves the old
// file; a folder given for outputs is never left.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "config/output_file.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::config;
namespace fs = std::filesystem;

namespace {

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(OutputFile, ALinkWhereTheOldTemporaryNameWasIsNotFollowed) {
  const std::string d = fresh_test_dir("out");
  std::ofstream(d + "/victim") << "keep me";
  fs::create_symlink(d + "/victim", d + "/out.json.tmp");  // the name the old writer used
  write_output_text(d + "/out.json", "{}\n");
  EXPECT_EQ(read_text(d + "/victim"), "keep me");
  EXPECT_EQ(read_text(d + "/out.json"), "{}\n");
  EXPECT_EQ(files_in(d), 3u);  // victim, the link, out.json: no temporary left
}

TEST(OutputFile, ReplacesAFileKeepingItsPermissions) {
  const std::string d = fresh_test_dir("out");
  std::ofstream(d + "/a.csv") << "old";
  fs::permissions(d + "/a.csv", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_output_text(d + "/a.csv", "new");
  EXPECT_EQ(read_text(d + "/a.csv"), "new");
  EXPECT_EQ(fs::status(d + "/a.csv").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(OutputFile, AFailingWriterLeavesTheOldFileAndNoTemporary) {
  const std::string d = fresh_test_dir("out");
  std::ofstream(d + "/r.json") << "previous";
  EXPECT_THROW(write_output_file(d + "/r.json",
                                 [](std::ostream& out) {
                                   out << "half";
                                   throw std::runtime_error("simulation failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(read_text(d + "/r.json"), "previous");
  EXPECT_EQ(files_in(d), 1u);
}

TEST(OutputFile, ACharacterDeviceIsWrittenInPlaceNotReplaced) {
  write_output_text("/dev/null", "discarded\n");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFile, AFifoWithoutReaderIsRefusedWithoutHanging) {
  const std::string d = fresh_test_dir("out");
  ASSERT_EQ(::mkfifo((d + "/pipe").c_str(), 0600), 0);
  try {
    write_output_text(d + "/pipe", "x");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("FIFO with no reader"), std::string::npos) << e.what();
  }
  struct stat st {};
  ASSERT_EQ(::stat((d + "/pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(OutputFile, AFifoWithAReaderGetsTheText) {
  const std::string d = fresh_test_dir("out");
  const std::string pipe = d + "/pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_output_text(pipe, "through the pipe");
  char buf[64] = {};
  const ssize_t n = ::read(reader, buf, sizeof buf - 1);
  ::close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "through the pipe");
}

TEST(OutputFile, ADirectoryIsRefused) {
  const std::string d = fresh_test_dir("out");
  EXPECT_THROW(write_output_text(d, "x"), InputError);
}

TEST(OutputFile, NothingIsWrittenOutsideTheOutputFolder) {
  const std::string d = fresh_test_dir("out");
  fs::create_directories(d + "/scenarios");
  EXPECT_THROW(write_output_text(d + "/scenarios/../escaped.yaml", "x", {d + "/scenarios"}), InputError);
  EXPECT_FALSE(fs::exists(d + "/escaped.yaml"));
  // A case id with a path in it becomes a plain name inside the folder.
  const std::string name = safe_file_name("../../etc/x.yaml");
  EXPECT_EQ(name.find('/'), std::string::npos);
  EXPECT_NE(name[0], '.');
  write_output_text(d + "/scenarios/" + name, "x", {d + "/scenarios"});
  EXPECT_TRUE(fs::exists(d + "/scenarios/" + name));
  // A link inside the folder that points out of it is replaced, not followed.
  std::ofstream(d + "/outside") << "keep";
  fs::create_symlink(d + "/outside", d + "/scenarios/link.yaml");
  write_output_text(d + "/scenarios/link.yaml", "inside", {d + "/scenarios"});
  EXPECT_EQ(read_text(d + "/outside"), "keep");
  EXPECT_FALSE(fs::is_symlink(d + "/scenarios/link.yaml"));
}

TEST(OutputFile, ALinkNamedAsTheOutputIsFollowedToItsFile) {
  const std::string d = fresh_test_dir("out");
  std::ofstream(d + "/real.json") << "old";
  fs::create_symlink("real.json", d + "/link.json");
  write_output_text(d + "/link.json", "new");
  EXPECT_TRUE(fs::is_symlink(d + "/link.json"));
  EXPECT_EQ(read_text(d + "/real.json"), "new");
}
