// Scratch file paths for tests: ctest runs every test in its own process, in parallel, so two
// tests must never share a file name in the temporary directory.
#pragma once
#include <gtest/gtest.h>

#include <string>

inline std::string test_tmp(const std::string& name) {
  return testing::TempDir() + "/" + testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "." +
         testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + name;
}
