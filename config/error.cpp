#include "config/error.hpp"

#include <algorithm>

namespace stacksim::config {
namespace {
std::string compose(const std::string& file, int line, const std::string& key, const std::string& reason,
                    const std::string& fix) {
  std::string m = file.empty() ? "<input>" : file;
  if (line > 0) m += ":" + std::to_string(line);
  m += ": ";
  if (!key.empty()) m += "key '" + key + "': ";
  m += reason;
  if (!fix.empty()) m += ". Fix: " + fix;
  return m;
}
}  // namespace

InputError::InputError(std::string file, int line, std::string key, std::string reason, std::string fix,
                       std::string suggestion)
    : std::runtime_error(compose(file, line, key, reason, fix)),
      file_(std::move(file)),
      key_(std::move(key)),
      reason_(std::move(reason)),
      fix_(std::move(fix)),
      suggestion_(std::move(suggestion)),
      line_(line) {}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Accept a suggestion within about a third of the key's length (at least 2 edits).
  const size_t limit = std::max<size_t>(2, key.size() / 3);
  if (best_d <= limit) return best;
  // Else a shortened key: the one candidate that begins with it ("overlap_p2p" -> "overlap_p2p_comm").
  std::string prefixed;
  for (const auto& c : candidates)
    if (key.size() >= 3 && c.compare(0, key.size(), key) == 0) {
      if (!prefixed.empty()) return std::string();
      prefixed = c;
    }
  return prefixed;
}

}  // namespace stacksim::config
