// Reading YAML with errors that name the file, the line and the key path (e.g.
// "cluster.fabric.nics_per_node"), never a crash or a silent default.
#pragma once
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "sim/units.hpp"

namespace stacksim::config {

// Input limits (docs/reliability.md): a YAML input of at most this many bytes and nodes (aliases
// counted where they are used); whole numbers of at most this magnitude.
inline constexpr size_t kMaxYamlBytes = size_t(64) << 20;
inline constexpr size_t kMaxYamlNodes = 4'000'000;
inline constexpr long long kMaxYamlInt = (1ll << 31) - 1;

// A YAML node together with where it came from, for error messages.
class Node {
 public:
  Node(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  // InputError on I/O, syntax, a limit, a duplicate key, several documents or text not in UTF-8.
  static Node load_file(const std::string& path);
  static Node load_string(const std::string& text, const std::string& name);

  const YAML::Node& yaml() const { return node_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  int line() const;  // 1-based, 0 when unknown

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_null() const { return !node_ || node_.IsNull(); }
  bool has(const std::string& key) const;
  Node operator[](const std::string& key) const;  // missing -> a null Node with the right path
  Node at(size_t index) const;
  size_t size() const;
  std::vector<std::string> keys() const;

  // Fails (InputError, nearest valid key suggested) if the map has a key not in `allowed`.
  void check_keys(const std::vector<std::string>& allowed) const;
  void require_map() const;

  // Typed reads of a child key. `required_*` throw if absent; `optional_*` return nullopt/default.
  std::string required_string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  double required_number(const std::string& key) const;
  std::optional<double> optional_number(const std::string& key) const;
  long long required_int(const std::string& key) const;
  std::optional<long long> optional_int(const std::string& key) const;
  bool bool_or(const std::string& key, bool fallback) const;
  // Quantities with units ("450 GB/s"); a bare number is read in `bare_scale` base units if > 0.
  double required_quantity(const std::string& key, sim::Dimension dim, double bare_scale = 0) const;
  std::optional<double> optional_quantity(const std::string& key, sim::Dimension dim, double bare_scale = 0) const;

  // Value checks with uniform messages.
  double positive(const std::string& key, double value) const;      // > 0
  double non_negative(const std::string& key, double value) const;  // >= 0

  // An error about this node (or its child `key`).
  [[noreturn]] void fail(const std::string& key, const std::string& reason, const std::string& fix) const;

  std::string as_string() const;
  double as_number() const;
  long long as_int() const;

 private:
  std::string child_path(const std::string& key) const;
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

// Applies "a.b.c=value" to a YAML tree (the CLI's --set). The value is parsed as YAML (numbers,
// strings, lists). Intermediate maps are created; an unknown key is caught later by check_keys.
void apply_override(YAML::Node& root, const std::string& assignment, const std::string& origin);

// Re-raises `e` as an error of the override that wrote its key (or a map above or below it): the
// key has no line in the file, and an unknown key's suggestion is spelled as the whole corrected
// override ("did you mean --set parallelism.tp=4?"). Errors about the file's own keys pass
// unchanged. `flag` names the option in messages ("--set").
[[noreturn]] void rethrow_for_overrides(const InputError& e, const std::vector<std::string>& assignments,
                                        const std::string& flag);

}  // namespace stacksim::config
