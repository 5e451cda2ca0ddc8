#include "config/yaml.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stacksim::config {

Node Node::load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path, 0, "", "is a directory, not a YAML file", "give the path of a .yaml file");
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "", "cannot open the file", "check the path exists and is readable");
  std::stringstream ss;
  ss << in.rdbuf();
  return load_string(ss.str(), path);
}

Node Node::load_string(const std::string& text, const std::string& name) {
  try {
    YAML::Node n = YAML::Load(text);
    return Node(n, name, "");
  } catch (const YAML::Exception& e) {
    throw InputError(name, e.mark.is_null() ? 0 : e.mark.line + 1, "",
                     "malformed YAML: " + e.msg, "fix the YAML syntax at that line");
  }
}

int Node::line() const {
  if (!node_) return 0;
  const auto m = node_.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

std::string Node::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool Node::has(const std::string& key) const {
  return node_ && node_.IsMap() && node_[key] && !node_[key].IsNull();
}

Node Node::operator[](const std::string& key) const {
  if (node_ && node_.IsMap()) {
    YAML::Node child = node_[key];
    if (child) return Node(child, file_, child_path(key));
  }
  return Node(YAML::Node(), file_, child_path(key));
}

Node Node::at(size_t index) const {
  return Node(node_[index], file_, path_ + "[" + std::to_string(index) + "]");
}

size_t Node::size() const { return node_ ? node_.size() : 0; }

std::vector<std::string> Node::keys() const {
  std::vector<std::string> out;
  if (node_ && node_.IsMap())
    for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

void Node::require_map() const {
  if (!node_ || !node_.IsMap())
    fail("", node_ && !node_.IsNull() ? "expected a map of keys" : "is empty",
         path_.empty() ? std::string("write the file as 'key: value' lines (see scenarios/ for examples)")
                       : "write it as 'key: value' lines indented under '" + path_ + "'");
}

void Node::check_keys(const std::vector<std::string>& allowed) const {
  if (!node_ || node_.IsNull()) return;
  require_map();
  for (const auto& kv : node_) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k;
    if (ok) continue;
    const std::string near = nearest(k, allowed);
    std::string valid;
    for (const auto& a : allowed) valid += (valid.empty() ? "" : ", ") + a;
    const int ln = kv.first.Mark().is_null() ? line() : kv.first.Mark().line + 1;
    throw InputError(file_, ln, child_path(k), "unknown key",
                     near.empty() ? "valid keys here: " + valid
                                  : "did you mean '" + near + "'? (valid keys here: " + valid + ")",
                     near.empty() ? "" : child_path(near));
  }
}

void Node::fail(const std::string& key, const std::string& reason, const std::string& fix) const {
  Node target = key.empty() ? *this : (*this)[key];
  const int ln = target.line() ? target.line() : line();
  throw InputError(file_, ln, key.empty() ? path_ : child_path(key), reason, fix);
}

std::string Node::as_string() const {
  if (!node_ || !node_.IsScalar()) fail("", "expected a single value (a string)", "write a plain value");
  return node_.as<std::string>();
}

double Node::as_number() const {
  if (!node_ || !node_.IsScalar()) fail("", "expected a number", "write a plain number");
  try {
    size_t pos = 0;
    const std::string s = node_.as<std::string>();
    const double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail("", "expected a number, got '" + node_.as<std::string>() + "'", "write a plain number such as 8 or 1.5");
  }
}

long long Node::as_int() const {
  const double v = as_number();
  if (std::floor(v) != v) fail("", "expected a whole number, got " + node_.as<std::string>(), "write an integer");
  return static_cast<long long>(v);
}

std::string Node::required_string(const std::string& key) const {
  if (!has(key)) fail(key, "missing", "add '" + key + ": ...' under '" + (path_.empty() ? "the top level" : path_) + "'");
  return (*this)[key].as_string();
}

std::string Node::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? (*this)[key].as_string() : fallback;
}

double Node::required_number(const std::string& key) const {
  if (!has(key)) fail(key, "missing", "add '" + key + ": <number>' under '" + (path_.empty() ? "the top level" : path_) + "'");
  return (*this)[key].as_number();
}

std::optional<double> Node::optional_number(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return (*this)[key].as_number();
}

long long Node::required_int(const std::string& key) const {
  if (!has(key)) fail(key, "missing", "add '" + key + ": <integer>' under '" + (path_.empty() ? "the top level" : path_) + "'");
  return (*this)[key].as_int();
}

std::optional<long long> Node::optional_int(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return (*this)[key].as_int();
}

bool Node::bool_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string s = (*this)[key].as_string();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(key, "expected true or false, got '" + s + "'", "write true or false");
}

double Node::required_quantity(const std::string& key, sim::Dimension dim, double bare_scale) const {
  if (!has(key)) fail(key, "missing", std::string("add '") + key + ": <" + sim::dimension_name(dim) + ">'");
  return *optional_quantity(key, dim, bare_scale);
}

std::optional<double> Node::optional_quantity(const std::string& key, sim::Dimension dim,
                                              double bare_scale) const {
  if (!has(key)) return std::nullopt;
  const Node child = (*this)[key];
  const std::string text = child.as_string();
  try {
    return sim::parse_quantity(text, dim, bare_scale);
  } catch (const std::invalid_argument& e) {
    child.fail("", e.what(), std::string("write a ") + sim::dimension_name(dim) + " with its unit");
  }
}

double Node::positive(const std::string& key, double value) const {
  if (!(value > 0)) fail(key, "must be positive, got " + std::to_string(value), "use a value greater than zero");
  return value;
}

double Node::non_negative(const std::string& key, double value) const {
  if (!(value >= 0)) fail(key, "must not be negative, got " + std::to_string(value), "use zero or a positive value");
  return value;
}

void apply_override(YAML::Node& root, const std::string& assignment, const std::string& origin) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(origin, 0, assignment, "an override must look like KEY=VALUE",
                     "write e.g. --set hardware.gpu=H200-SXM-141GB");
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  // An empty value would parse as null, which reads as "key absent": a silent default.
  if (value.find_first_not_of(" \t") == std::string::npos)
    throw InputError(origin, 0, key, "the override has no value", "write " + key + "=VALUE");
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw InputError(origin, 0, key, "empty path component", "write dotted keys such as a.b.c");
    parts.push_back(p);
  }
  YAML::Node value_node;
  try {
    value_node = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(origin, 0, key, "the value '" + value + "' is not valid YAML: " + e.msg, "quote it");
  }
  // yaml-cpp's operator[] on a non-const node creates missing children; walk with copies.
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    if (cur[parts[i]] && !cur[parts[i]].IsMap() && !cur[parts[i]].IsNull())
      throw InputError(origin, 0, key, "'" + parts[i] + "' holds a value, not a map of keys",
                       "set '" + parts[i] + "' itself, or check the key path");
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(cur[parts[i]]);
  }
  YAML::Node last = chain.back();
  last[parts.back()] = value_node;
}

namespace {

std::string key_of(const std::string& assignment) { return assignment.substr(0, assignment.find('=')); }

bool within(const std::string& key, const std::string& prefix) {
  return key == prefix || (key.size() > prefix.size() && key.rfind(prefix + ".", 0) == 0);
}

}  // namespace

void rethrow_for_overrides(const InputError& e, const std::vector<std::string>& assignments,
                           const std::string& flag) {
  // The last override of a key wins in the tree, so it is the one to blame.
  for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
    const std::string key = key_of(*it);
    if (e.key().empty() || !(within(e.key(), key) || within(key, e.key()))) continue;
    // A misspelled part of the override's own path: respell the whole override.
    std::string fix = e.fix();
    if (!e.suggestion().empty() && within(key, e.key()))
      fix = "did you mean " + flag + " " + e.suggestion() + it->substr(e.key().size()) + "?";
    throw InputError(flag + " " + *it, 0, e.key(), e.reason(), fix, e.suggestion());
  }
  throw e;
}

}  // namespace stacksim::config
