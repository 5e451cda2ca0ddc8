// Scratch files for tests: ctest runs every test in its own process, in parallel, so two tests
// must never share a file name in the temporary directory. Every name below carries the running
// test's suite and name.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

// A path of the running test's own: TempDir/Suite.Test-name.
inline std::string test_tmp(const std::string& name) {
  return testing::TempDir() + "/" + testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "." +
         testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + name;
}

// A folder of the running test's own, created if missing (files in it stay between calls).
inline std::string test_dir(const std::string& name) {
  const std::string d = test_tmp(name);
  std::filesystem::create_directories(d);
  return d;
}

// The same folder emptied first (nothing left from an earlier run of the test).
inline std::string fresh_test_dir(const std::string& name) {
  std::filesystem::remove_all(test_tmp(name));
  return test_dir(name);
}

// A file's whole content ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
