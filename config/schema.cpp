#include "config/schema.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "config/scenario_schema_rows.hpp"

namespace stacksim::config {
namespace {

const std::unordered_map<std::string_view, const KeySpec*>& index() {
  static const auto idx = [] {
    std::unordered_map<std::string_view, const KeySpec*> m;
    for (const auto& k : scenario_schema()) m.emplace(k.path, &k);
    return m;
  }();
  return idx;
}

bool holds_map(KeyType t) {
  return t == KeyType::Map || t == KeyType::IntOrMap || t == KeyType::NumberOrMap || t == KeyType::ListOrMap ||
         t == KeyType::MapList;
}

// The section whose keys a map-holding key takes ("prices" for purchase.options[].prices), or "".
std::string_view alias_of(const KeySpec& k) { return holds_map(k.type) ? k.values : std::string_view(); }

// The declared path a section's children hang under: the section itself, its alias, or "a[]".
std::string children_root(const std::string& section) {
  if (section.empty()) return section;
  if (section.size() > 2 && section.compare(section.size() - 2, 2, "[]") == 0) {
    const KeySpec* list = find_key(section.substr(0, section.size() - 2));
    if (list && !list->values.empty()) return std::string(list->values);
    return section;
  }
  const KeySpec* k = find_key(section);
  if (k && !alias_of(*k).empty()) return std::string(alias_of(*k));
  return section;
}

const std::map<std::string, std::vector<std::string>, std::less<>>& children() {
  static const auto out = [] {
    std::map<std::string, std::vector<std::string>, std::less<>> m;
    for (const auto& k : scenario_schema()) {
      const auto dot = k.path.rfind('.');
      const std::string parent(dot == std::string_view::npos ? std::string_view() : k.path.substr(0, dot));
      m[parent].emplace_back(dot == std::string_view::npos ? k.path : k.path.substr(dot + 1));
    }
    return m;
  }();
  return out;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

std::string fmt_in_unit(const KeySpec& k, double v) {
  if (k.type != KeyType::Quantity) return fmt(v);
  switch (k.dim) {
    case sim::Dimension::Time:
      return sim::format_seconds(v);
    case sim::Dimension::Bytes:
      return sim::format_bytes(v);
    case sim::Dimension::Bandwidth:
      return sim::format_bandwidth(v);
    default:
      return fmt(v);
  }
}

std::string words(std::string_view values) {
  std::string out(values);
  for (size_t p = out.find('|'); p != std::string::npos; p = out.find('|', p)) out.replace(p, 1, ", ");
  return out;
}

bool is_word(const KeySpec& k, const std::string& v) {
  std::string_view rest = k.values;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    if (rest.substr(0, bar) == v) return true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

std::string shown(const Node& v) {
  if (v.is_map()) return "a map";
  if (v.is_sequence()) return "a list";
  return "'" + v.yaml().Scalar() + "'";
}

// "a whole number (GPUs, at least 1)": the type with its unit and range.
std::string expected(const KeySpec& k) {
  std::string extra = k.type == KeyType::Quantity ? std::string() : std::string(k.unit);
  const std::string range = describe_range(k);
  if (!range.empty()) extra += (extra.empty() ? "" : ", ") + range;
  return describe_type(k) + (extra.empty() ? "" : " (" + extra + ")");
}

std::string fix_of(const KeySpec& k) {
  return "write " + describe_type(k) + " (" + std::string(k.doc) +
         "; the key reference: docs/scenario.md, stacksim schema)";
}

[[noreturn]] void type_error(const KeySpec& k, const Node& v) {
  v.fail("", "expected " + expected(k) + ", got " + shown(v), fix_of(k));
}

void check_range(const KeySpec& k, const Node& v, double x) {
  const bool low = k.min_exclusive ? !(x > k.min) : !(x >= k.min);
  if (low || x > k.max)
    v.fail("",
           "must be " + describe_range(k) + ", got " + fmt_in_unit(k, x) +
               (k.unit.empty() || k.type == KeyType::Quantity ? "" : " " + std::string(k.unit)),
           "use a value " + describe_range(k) + " (" + std::string(k.doc) + "; docs/scenario.md)");
}

void walk(const Node& n, const std::string& spec_path);

double number_of(const KeySpec& k, const Node& v, bool whole) {
  if (!v.yaml().IsScalar()) type_error(k, v);
  double x = 0;
  try {
    x = v.as_number();
  } catch (const InputError&) {
    type_error(k, v);
  }
  if (whole && std::floor(x) != x) type_error(k, v);
  check_range(k, v, x);
  if (whole) v.as_int();  // the reader's own bound on whole numbers
  return x;
}

void check_words(const KeySpec& k, const Node& v) {
  if (!v.yaml().IsScalar()) type_error(k, v);
  const std::string s = v.as_string();
  if (is_word(k, s)) return;
  std::vector<std::string> all;
  for (std::string_view rest = k.values; !rest.empty();) {
    const auto bar = rest.find('|');
    all.emplace_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  const std::string near = nearest(s, all);
  v.fail("", "expected " + describe_type(k) + ", got '" + s + "'",
         (near.empty() ? "" : "did you mean '" + near + "'? ") + fix_of(k));
}

void check_value(const KeySpec& k, const Node& v, const std::string& sp) {
  switch (k.type) {
    case KeyType::Map:
      if (!v.is_map()) type_error(k, v);
      return walk(v, sp);
    case KeyType::Int:
      number_of(k, v, true);
      return;
    case KeyType::Number:
      number_of(k, v, false);
      return;
    case KeyType::Bool: {
      if (!v.yaml().IsScalar()) type_error(k, v);
      const std::string s = v.as_string();
      if (s != "true" && s != "false" && s != "yes" && s != "no" && s != "on" && s != "off") type_error(k, v);
      return;
    }
    case KeyType::String:
      if (!v.yaml().IsScalar()) type_error(k, v);
      return;
    case KeyType::Enum:
      return check_words(k, v);
    case KeyType::Quantity: {
      if (!v.yaml().IsScalar()) type_error(k, v);
      double x = 0;
      try {
        x = sim::parse_quantity(v.as_string(), k.dim, k.bare_scale);
      } catch (const std::invalid_argument&) {
        type_error(k, v);
      }
      if (!std::isfinite(x)) type_error(k, v);
      return check_range(k, v, x);
    }
    case KeyType::List:
      if (!v.is_sequence()) type_error(k, v);
      if (!k.values.empty())
        for (size_t i = 0; i < v.size(); ++i) check_words(k, v.at(i));
      return;
    case KeyType::MapList:
      if (!v.is_sequence()) type_error(k, v);
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v.at(i).is_map()) type_error(k, v.at(i));
        walk(v.at(i), sp + "[]");
      }
      return;
    case KeyType::IntOrMap:
      if (v.is_map()) return walk(v, sp);
      number_of(k, v, true);
      return;
    case KeyType::NumberOrMap:
      if (v.is_map()) return walk(v, sp);
      number_of(k, v, false);
      return;
    case KeyType::EnumOrList:
      if (!v.is_sequence()) return check_words(k, v);
      for (size_t i = 0; i < v.size(); ++i) check_words(k, v.at(i));
      return;
    case KeyType::ListOrMap:
      if (v.is_map()) return walk(v, sp);
      if (!v.is_sequence()) type_error(k, v);
      return;
    case KeyType::IntOrEnum:
      if (v.yaml().IsScalar() && is_word(k, v.as_string())) return;
      number_of(k, v, true);
      return;
  }
}

// The keys a misspelt key is compared with: the section's, or for a dotted key ("ttft_ms.p98",
// the flat spelling of a nested key) those of the section its head names, spelled the same way.
std::vector<std::string> candidates(const std::string& key, const std::string& section) {
  const auto dot = key.rfind('.');
  if (dot != std::string::npos) {
    const std::string head = key.substr(0, dot);
    const KeySpec* k = find_key(section.empty() ? head : section + "." + head);
    if (k && holds_map(k->type)) {
      std::vector<std::string> out;
      for (const auto& c : scenario_keys(section.empty() ? head : section + "." + head)) out.push_back(head + "." + c);
      return out;
    }
  }
  return scenario_keys(section);
}

[[noreturn]] void unknown_key(const Node& n, const std::string& key, const std::string& section) {
  const std::vector<std::string> allowed = candidates(key, section);
  const std::string near = nearest(key, allowed);
  std::string valid;
  for (const auto& a : allowed) valid += (valid.empty() ? "" : ", ") + a;
  std::string hint;
  if (!near.empty()) {
    const KeySpec* k = find_key(section.empty() ? near : section + "." + near);
    hint = "did you mean '" + near + "'" + (k ? " (" + expected(*k) + ": " + std::string(k->doc) + ")" : "") + "? ";
  }
  const Node child = n[key];
  const int line = child.line() ? child.line() : n.line();
  const std::string where = n.path().empty() ? key : n.path() + "." + key;
  throw InputError(n.file(), line, where, "unknown key", hint + "(valid keys here: " + valid + ")",
                   near.empty() ? "" : (n.path().empty() ? near : n.path() + "." + near));
}

void walk(const Node& n, const std::string& spec_path) {
  for (const auto& key : n.keys()) {
    const std::string sp = spec_path.empty() ? key : spec_path + "." + key;
    const KeySpec* k = find_key(sp);
    if (!k) unknown_key(n, key, spec_path);
    const Node child = n[key];
    if (!child.is_null()) check_value(*k, child, sp);
  }
}

}  // namespace

const std::vector<KeySpec>& scenario_schema() {
  static const std::vector<KeySpec> table = [] {
    std::vector<KeySpec> t;
    rows::add_training_rows(t);
    rows::add_serving_rows(t);
    return t;
  }();
  return table;
}

const KeySpec* find_key(std::string_view path) {
  const auto& idx = index();
  if (const auto it = idx.find(path); it != idx.end()) return it->second;
  // Below a key that takes another section's keys (or an item of a list of maps): look there.
  // Resolved top-down, one component at a time (each prefix already mapped to the declared path
  // its children hang under), so the work is linear in the key's length; resolving each prefix
  // from the right recursively was exponential in the number of dots (a fuzzer's "s......s" key).
  const auto exact = [&](const std::string& p) -> const KeySpec* {
    const auto it = idx.find(p);
    return it == idx.end() ? nullptr : it->second;
  };
  std::string section;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string part(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    const std::string here = section.empty() ? part : section + "." + part;
    if (dot == std::string_view::npos) return exact(here);
    section = here;
    if (here.size() > 2 && here.compare(here.size() - 2, 2, "[]") == 0) {
      const KeySpec* list = exact(here.substr(0, here.size() - 2));
      if (list && !list->values.empty()) section = std::string(list->values);
    } else if (const KeySpec* k = exact(here); k && !alias_of(*k).empty()) {
      section = std::string(alias_of(*k));
    }
    start = dot + 1;
  }
}

std::vector<std::string> scenario_keys(std::string_view section) {
  const auto& c = children();
  const auto it = c.find(children_root(std::string(section)));
  return it == c.end() ? std::vector<std::string>{} : it->second;
}

void check_scenario(const Node& top) {
  top.require_map();
  walk(top, "");
}

void check_scenario_section(const Node& n, const std::string& path) {
  const KeySpec* k = find_key(path);
  if (!k) throw std::logic_error("check_scenario_section: '" + path + "' is not declared in the scenario schema");
  if (!n.is_null()) check_value(*k, n, path);
}

void check_scenario_value(const std::string& dotted_key, const YAML::Node& value, const std::string& origin) {
  std::string section;
  for (size_t start = 0;;) {
    const auto dot = dotted_key.find('.', start);
    const std::string part = dotted_key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const std::string path = section.empty() ? part : section + "." + part;
    const KeySpec* k = find_key(path);
    if (!k) {
      YAML::Node probe(YAML::NodeType::Map);
      probe[part] = 0;
      unknown_key(Node(probe, origin, section), part, section);
    }
    if (dot == std::string::npos) {
      const Node v(value, origin, dotted_key);
      if (!v.is_null()) check_value(*k, v, path);
      return;
    }
    if (!holds_map(k->type) || k->type == KeyType::MapList)
      throw InputError(origin, 0, dotted_key, "'" + path + "' holds " + describe_type(*k) + ", not a map of keys",
                       "set '" + path + "' itself, or check the key path");
    section = path;
    start = dot + 1;
  }
}

std::string describe_range(const KeySpec& k) {
  const bool lo = std::isfinite(k.min), hi = std::isfinite(k.max);
  if (lo && k.min == 0 && k.min_exclusive && !hi) return "positive";
  if (lo && hi && k.min_exclusive) return "above " + fmt_in_unit(k, k.min) + " and at most " + fmt_in_unit(k, k.max);
  if (lo && hi) return "from " + fmt_in_unit(k, k.min) + " to " + fmt_in_unit(k, k.max);
  if (lo) return (k.min_exclusive ? "above " : "at least ") + fmt_in_unit(k, k.min);
  if (hi) return "at most " + fmt_in_unit(k, k.max);
  return "";
}

std::string describe_type(const KeySpec& k) {
  switch (k.type) {
    case KeyType::Map:
      return "a map of keys";
    case KeyType::Int:
      return "a whole number";
    case KeyType::Number:
      return "a number";
    case KeyType::Bool:
      return "true or false";
    case KeyType::String:
      return "a plain value";
    case KeyType::Enum:
      return "one of " + words(k.values);
    case KeyType::Quantity:
      return std::string("a ") + sim::dimension_name(k.dim) +
             (k.bare_scale > 0 ? " (a bare number is in " + std::string(k.unit) + ")"
                               : " with its unit (e.g. '2 " + std::string(k.unit) + "')");
    case KeyType::List:
      return k.values.empty() ? "a list" : "a list of " + words(k.values);
    case KeyType::MapList:
      return "a list of maps";
    case KeyType::IntOrMap:
      return "a whole number or a map of keys";
    case KeyType::NumberOrMap:
      return "a number or a map of keys";
    case KeyType::EnumOrList:
      return "one of " + words(k.values) + ", or a list of them";
    case KeyType::ListOrMap:
      return "a list or a map of keys";
    case KeyType::IntOrEnum:
      return "a whole number or one of " + words(k.values);
  }
  return "";
}

}  // namespace stacksim::config
