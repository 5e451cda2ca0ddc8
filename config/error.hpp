// Errors in user input. Every message names the file, the line (when known), the key and what to
// do; the CLI maps InputError to exit code 2 (DESIGN.md contracts).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace stacksim::config {

class InputError : public std::runtime_error {
 public:
  // `suggestion`: the full dotted key the user probably meant (unknown keys), or "".
  InputError(std::string file, int line, std::string key, std::string reason, std::string fix,
             std::string suggestion = "");
  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when unknown
  const std::string& key() const { return key_; }
  const std::string& reason() const { return reason_; }
  const std::string& fix() const { return fix_; }
  const std::string& suggestion() const { return suggestion_; }

 private:
  std::string file_, key_, reason_, fix_, suggestion_;
  int line_;
};

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate nearest to `key`, or "" when none is reasonably close.
std::string nearest(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace stacksim::config
