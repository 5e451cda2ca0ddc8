// The scenario schema, declared once: every key a scenario file may hold, with its type, unit,
// default, allowed range and a one-line description (the table is scenario_schema_*.cpp). It is
// used for
//   - checking a scenario before it is parsed (check_scenario): unknown keys ("did you mean"),
//     values of the wrong type, numbers out of range, each named by file, line and key;
//   - the key lists of the section parsers (scenario_keys, given to Node::check_keys);
//   - docs/scenario.md's key reference (schema_markdown; `stacksim schema --markdown`);
//   - Python's Scenario.set() (check_scenario_value through stacksim._core).
// Why a table compiled in rather than a YAML file: it ships inside every binary and the Python
// module (no data directory to find), and the compiler checks each row's shape.
#pragma once
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml.hpp"
#include "sim/units.hpp"

namespace stacksim::config {

enum class KeyType {
  Map,          // a section of keys (declared below it)
  Int,          // a whole number
  Number,       // a real number
  Bool,         // true | false (yes/no, on/off)
  String,       // a plain value (a name, a path, a version)
  Enum,         // one of `values`
  Quantity,     // a number with its unit ("2 GB/s"); a bare number is in `unit` when bare_scale > 0
  List,         // a list of plain values (each one of `values` when given)
  MapList,      // a list of maps, whose keys are declared under "<path>[]"
  IntOrMap,     // a whole number, or a map of the keys declared below it
  NumberOrMap,  // a number, or a map of the keys declared below it
  EnumOrList,   // one of `values`, or a list of them
  ListOrMap,    // a list of plain values, or a map of the keys declared below it
  IntOrEnum,    // a whole number, or one of `values`
};

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

struct KeySpec {
  std::string_view path;  // dotted from the top of the file; "a[].b": key b of each item of list a
  KeyType type = KeyType::String;
  std::string_view unit;   // "GB/s", "tokens", "GPUs" ("" when it has none)
  std::string_view def;    // default, as a user would write it ("" = required, or none)
  double min = -kNoLimit;  // allowed range, in `unit` (quantities: in base units)
  double max = kNoLimit;
  bool min_exclusive = false;  // true: value > min (positive), false: value >= min
  std::string_view values;     // Enum / List / EnumOrList / IntOrEnum: the allowed words, "a|b|c"
  std::string_view doc;        // one line
  sim::Dimension dim = sim::Dimension::Dimensionless;  // Quantity only
  double bare_scale = 0;  // Quantity only: a bare number times this is base units (0: unit required)
};

// The declaration, in the order of docs/scenario.md (sections before their keys).
const std::vector<KeySpec>& scenario_schema();
// The spec of a dotted path ("parallelism.tp", "purchase.options[].node"), or nullptr.
const KeySpec* find_key(std::string_view path);
// The names of the keys declared directly under a section ("" = the top level).
std::vector<std::string> scenario_keys(std::string_view section);

// Checks a whole scenario tree against the schema: InputError naming the file, line, key, the
// expected type/unit/range and, for an unknown key, the nearest declared one. Null values pass
// (a null key reads as absent everywhere).
void check_scenario(const Node& top);
// Checks one section read from a file of its own (`plan --purchase FILE`) as the section `path`.
void check_scenario_section(const Node& n, const std::string& path);
// Checks one dotted key and its value, as Python's Scenario.set() and `--set` write them.
void check_scenario_value(const std::string& dotted_key, const YAML::Node& value, const std::string& origin);

// "a whole number (GPUs, at least 1, default 1)": what a key expects, for messages and docs.
std::string describe_type(const KeySpec& k);
std::string describe_range(const KeySpec& k);  // "at least 1", "0 to 1", "" when unbounded

// The key reference of docs/scenario.md: one table per section.
std::string schema_markdown();

}  // namespace stacksim::config
