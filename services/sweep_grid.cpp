#include "services/sweep_grid.hpp"

namespace stacksim::analysis {

uint64_t SweepGrid::size() const {
  constexpr uint64_t kMax = uint64_t(1) << 63;
  uint64_t n = 1;
  for (const auto& v : values) {
    if (v.empty()) return 0;
    if (n > kMax / v.size()) return 0;
    n *= v.size();
  }
  return n;
}

std::vector<std::string> SweepGrid::point(uint64_t index) const {
  std::vector<std::string> p(keys.size());
  for (size_t k = keys.size(); k-- > 0;) {
    p[k] = values[k][index % values[k].size()];
    index /= values[k].size();
  }
  return p;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string join_csv(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  return line;
}

}  // namespace stacksim::analysis
