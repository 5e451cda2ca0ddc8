// The YAML reader's limits and refusals (docs/reliability.md): only regular files (a device or a
// FIFO neither hangs nor grows), a size limit, a node limit that stops alias bombs, one document,
// no key twice, UTF-8 text, whole numbers that fit, quantities that stay finite.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::config;

namespace {

// The InputError's message for reading `text` (or the file `path`), "" when it reads.
std::string error_of_text(const std::string& text) {
  try {
    Node::load_string(text, "in.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string error_of_file(const std::string& path) {
  try {
    Node::load_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(InputLimits, DevicesAndFifosAreRefusedWithoutReading) {
  EXPECT_TRUE(has(error_of_file("/dev/zero"), "not a regular file")) << error_of_file("/dev/zero");
  const std::string fifo = test_tmp("fifo.yaml");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(has(error_of_file(fifo), "not a regular file"));  // returns: no writer needed
}

TEST(InputLimits, AFileOverTheSizeLimitIsRefusedBeforeReading) {
  const std::string big = test_tmp("big.yaml");
  std::filesystem::remove(big);
  std::ofstream(big) << "a: 1\n";
  std::filesystem::resize_file(big, kMaxYamlBytes + 1);  // sparse: nothing is written
  const std::string m = error_of_file(big);
  EXPECT_TRUE(has(m, "over the limit")) << m;
}

TEST(InputLimits, AnAliasBombStopsAtTheNodeLimit) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i)
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  const std::string m = error_of_text(text);  // 10^9 nodes expanded
  EXPECT_TRUE(has(m, "YAML nodes")) << m;
  // A few aliases are fine.
  EXPECT_EQ(error_of_text("a: &x {k: 1}\nb: *x\n"), "");
}

TEST(InputLimits, DuplicateKeysAndExtraDocumentsAreRefused) {
  const std::string dup = error_of_text("cluster:\n  nodes: 2\n  nodes: 4\n");
  EXPECT_TRUE(has(dup, "in.yaml:3: key 'cluster.nodes': is given twice")) << dup;
  const std::string docs = error_of_text("a: 1\n---\nb: 2\n");
  EXPECT_TRUE(has(docs, "2 YAML documents")) << docs;
  EXPECT_EQ(error_of_text("---\na: 1\n"), "");  // one document with its marker
}

// fuzz_scenario's first finding: yaml-cpp 0.7's LoadAll never returns on a ',' outside a flow list
// or map (an empty document reported at the same place forever, growing without bound). A child
// process with an alarm, so that the test fails instead of hanging when it comes back.
TEST(InputLimits, AStrayCommaIsASyntaxErrorNotAHang) {
  const auto error_within_5_s = [](const std::string& text) {
    int fds[2];
    if (::pipe(fds) != 0) return std::string("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(5);
      const std::string e = error_of_text(text);
      (void)!::write(fds[1], e.data(), e.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string e;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) e.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? e : std::string("hung (killed by the alarm)");
  };
  for (const std::string text : {",", ",b: 1\n", "# a comment\n  ,nodes: 1\ncollective: {op: all_reduce}\n", "[1]\n,\n",
                                 "a: 1\n---\nb: 2\n---\n,\n"}) {
    const std::string e = error_within_5_s(text);
    EXPECT_TRUE(has(e, "','") || has(e, "YAML documents")) << text << " -> " << e;
  }
  EXPECT_TRUE(has(error_within_5_s(",b: 1\n"), "in.yaml:1: malformed YAML: a ',' outside [ ] or { }"))
      << error_within_5_s(",b: 1\n");
  // fuzz_scenario's second finding: a NUL byte before the comma (the stuck place is not the ',').
  const std::string nul = error_within_5_s(std::string("\0,\x04\x10#\x04", 6));
  EXPECT_TRUE(has(nul, "malformed YAML")) << nul;
  const std::string three = error_within_5_s("a: 1\n---\nb: 2\n---\nc: 3\n");
  EXPECT_TRUE(has(three, "holds 3 YAML documents")) << three;
  EXPECT_EQ(error_within_5_s("a: [1, 2]\nb: {c: 1, d: 2}\ne: x, y\n"), "");  // commas where they belong
}

TEST(InputLimits, TextThatIsNotUtf8IsRefusedWithItsKey) {
  const std::string m = error_of_text("name: \"caf\xe9\"\n");
  EXPECT_TRUE(has(m, "key 'name'") && has(m, "UTF-8")) << m;
  EXPECT_EQ(error_of_text("name: caf\xc3\xa9\n"), "");
}

TEST(InputLimits, AnIntegerThatDoesNotFitIsReportedAsWritten) {
  const Node n = Node::load_string("layers: 9223372036854775808\nbig: 1e308\n", "in.yaml");
  try {
    n.required_int("layers");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "9223372036854775808")) << e.what();
    EXPECT_FALSE(has(e.what(), "-9223372036854775808")) << e.what();
  }
  EXPECT_THROW(n.required_int("big"), InputError);
}

TEST(InputLimits, AQuantityBeyondWhatADoubleHoldsIsOutOfRange) {
  const Node n = Node::load_string("read_GBps: 1e308\n", "in.yaml");
  try {
    n.required_quantity("read_GBps", stacksim::sim::Dimension::Bandwidth, 1e9);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "key 'read_GBps'") && has(e.what(), "out of range")) << e.what();
  }
}
