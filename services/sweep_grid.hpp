// A sweep's grid, enumerated lazily: point i of the cartesian product (the last key varies
// fastest) is computed from i, so a grid of 10^8 points costs the memory of its value lists.
// And the CSV rows a sweep writes: quoting, splitting, joining.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::analysis {

struct SweepGrid {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // per key, in the order written
  uint64_t size() const;                         // points; 0 when the product overflows 2^63
  std::vector<std::string> point(uint64_t index) const;
};

std::string csv_field(const std::string& s);
std::vector<std::string> split_csv(const std::string& line);
std::string join_csv(const std::vector<std::string>& fields);

}  // namespace stacksim::analysis
