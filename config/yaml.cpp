#include "config/yaml.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace stacksim::config {

namespace {

// UTF-8 as the standard defines it (no overlongs, no surrogates): outputs are JSON, which must be.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c >> 5) == 0x6) {
      n = 1, cp = c & 0x1F;
    } else if ((c >> 4) == 0xE) {
      n = 2, cp = c & 0x0F;
    } else if ((c >> 3) == 0x1E) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

// The tree's checks before anything reads it: at most kMaxYamlNodes nodes counted with aliases
// expanded (an alias bomb stops here, not in a reader), no key twice in one map (yaml-cpp would
// keep the first, Python's reader the last), text in UTF-8.
class TreeCheck {
 public:
  explicit TreeCheck(const std::string& file) : file_(file) {}
  void walk(const YAML::Node& n, const std::string& path) {
    if (++nodes_ > kMaxYamlNodes)
      throw InputError(
          file_, line_of(n), path,
          "has more than " + std::to_string(kMaxYamlNodes) + " YAML nodes (aliases counted where they are used)",
          "split the file, or write fewer aliases of large sections");
    if (n.IsScalar()) {
      if (!valid_utf8(n.Scalar()))
        throw InputError(file_, line_of(n), path, "is not valid UTF-8 text", "save the file as UTF-8");
    } else if (n.IsSequence()) {
      size_t i = 0;
      for (const auto& child : n) walk(child, path + "[" + std::to_string(i++) + "]");
    } else if (n.IsMap()) {
      std::unordered_set<std::string> seen;
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          throw InputError(file_, line_of(kv.first), path, "has a key that is not a plain value",
                           "write keys as plain words");
        const std::string& k = kv.first.Scalar();
        const std::string child = path.empty() ? k : path + "." + k;
        if (!valid_utf8(k))
          throw InputError(file_, line_of(kv.first), path, "has a key that is not valid UTF-8",
                           "save the file as UTF-8");
        if (!seen.insert(k).second)
          throw InputError(file_, line_of(kv.first), child, "is given twice in the same map",
                           "keep one of the two (remove or rename the other)");
        walk(kv.second, child);
      }
    }
  }

 private:
  const std::string& file_;
  size_t nodes_ = 0;
};

// Counts the documents of a stream without building nodes. yaml-cpp 0.7's
// LoadAll never ends on a ',' outside [ ] or { } (jbeder/yaml-cpp#1040: the parser does not consume
// the token and reports an empty document at the same place again, forever, each one allocated):
// such a repeated empty document is reported as the syntax error it is.
class DocumentCount : public YAML::EventHandler {
 public:
  explicit DocumentCount(const std::string& text) : text_(text) {}
  // Documents in `text`; throws YAML::ParserException on the stuck ','.
  size_t count() {
    std::istringstream in(text_);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(*this)) ++docs_;
    return docs_;
  }
  int second_line() const { return second_line_; }  // where the second document starts (1-based)
  void OnDocumentStart(const YAML::Mark& mark) override {
    events_ = 0, null_ = YAML::Mark::null_mark();
    if (docs_ == 1) second_line_ = mark.line + 1;
  }
  void OnDocumentEnd() override {
    // An empty document where the previous one was: the parser made no progress (a ',' outside a
    // flow collection, or a byte it cannot read there), and would report it again forever.
    const bool stuck = events_ == 1 && !null_.is_null() && !last_null_.is_null() && null_.pos == last_null_.pos;
    if (stuck || docs_ > text_.size() + 1) {  // every document but the first takes at least one byte
      const bool comma = null_.pos >= 0 && static_cast<size_t>(null_.pos) < text_.size() && text_[null_.pos] == ',';
      throw YAML::ParserException(
          null_.is_null() ? YAML::Mark() : null_,
          comma ? "a ',' outside [ ] or { } (commas separate the items of a flow list or map only)"
                : "the parser cannot go on from here (a character YAML does not allow there)");
    }
    last_null_ = events_ == 1 ? null_ : YAML::Mark::null_mark();
  }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { ++events_, null_ = mark; }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { ++events_; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { ++events_; }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnMapEnd() override {}

 private:
  const std::string& text_;
  size_t docs_ = 0;
  int events_ = 0, second_line_ = 0;
  YAML::Mark null_ = YAML::Mark::null_mark(), last_null_ = YAML::Mark::null_mark();
};

}  // namespace

Node Node::load_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw InputError(path, 0, "", "is a directory, not a YAML file", "give the path of a .yaml file");
  if (status.type() == std::filesystem::file_type::not_found)
    throw InputError(path, 0, "", "cannot open the file (it does not exist)", "check the path");
  // A device or FIFO could block or never end (/dev/zero): only regular files are read.
  if (!std::filesystem::is_regular_file(status))
    throw InputError(path, 0, "", "is not a regular file (a device, FIFO or socket)", "give the path of a .yaml file");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxYamlBytes)
    throw InputError(path, 0, "",
                     "is " + std::to_string(bytes) + " bytes, over the limit of " + std::to_string(kMaxYamlBytes) +
                         " bytes for a YAML input",
                     "split the file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open the file", "check the path exists and is readable");
  // Read in 64 KiB pieces up to one byte past the limit: a file that grows while being read stops
  // there, and a small file costs no 64 MiB buffer (each catalogue file is read this way).
  std::string text;
  char piece[1 << 16];
  while (text.size() <= kMaxYamlBytes && in.read(piece, sizeof piece).gcount() > 0)
    text.append(piece, static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxYamlBytes)  // grew while being read
    throw InputError(path, 0, "", "is over the limit of " + std::to_string(kMaxYamlBytes) + " bytes", "split the file");
  return load_string(text, path);
}

Node Node::load_string(const std::string& text, const std::string& name) {
  if (text.size() > kMaxYamlBytes)
    throw InputError(name, 0, "", "is over the limit of " + std::to_string(kMaxYamlBytes) + " bytes", "split the file");
  try {
    // Counted first (events only; not LoadAll, which never ends on a stray ','), then loaded.
    DocumentCount documents(text);
    if (const size_t n = documents.count(); n > 1)
      throw InputError(name, documents.second_line(), "",
                       "holds " + std::to_string(n) + " YAML documents (separated by ---); one is read",
                       "keep one document per file");
    YAML::Node n = YAML::Load(text);
    TreeCheck(name).walk(n, "");
    return Node(n, name, "");
  } catch (const YAML::Exception& e) {
    throw InputError(name, e.mark.is_null() ? 0 : e.mark.line + 1, "", "malformed YAML: " + e.msg,
                     "fix the YAML syntax at that line");
  }
}

int Node::line() const {
  if (!node_) return 0;
  const auto m = node_.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

std::string Node::child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

bool Node::has(const std::string& key) const { return node_ && node_.IsMap() && node_[key] && !node_[key].IsNull(); }

Node Node::operator[](const std::string& key) const {
  if (node_ && node_.IsMap()) {
    YAML::Node child = node_[key];
    if (child) return Node(child, file_, child_path(key));
  }
  return Node(YAML::Node(), file_, child_path(key));
}

Node Node::at(size_t index) const { return Node(node_[index], file_, path_ + "[" + std::to_string(index) + "]"); }

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
    throw InputError(
        file_, ln, child_path(k), "unknown key",
        near.empty() ? "valid keys here: " + valid : "did you mean '" + near + "'? (valid keys here: " + valid + ")",
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
  // Counts beyond 2^31 are no physical count here, and would overflow the int fields they land in.
  if (std::fabs(v) > kMaxYamlInt)
    fail("", "is out of range: " + node_.as<std::string>() + " (at most " + std::to_string(kMaxYamlInt) + " in size)",
         "use a realistic count");
  return static_cast<long long>(v);
}

std::string Node::required_string(const std::string& key) const {
  if (!has(key))
    fail(key, "missing", "add '" + key + ": ...' under '" + (path_.empty() ? "the top level" : path_) + "'");
  return (*this)[key].as_string();
}

std::string Node::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? (*this)[key].as_string() : fallback;
}

double Node::required_number(const std::string& key) const {
  if (!has(key))
    fail(key, "missing", "add '" + key + ": <number>' under '" + (path_.empty() ? "the top level" : path_) + "'");
  return (*this)[key].as_number();
}

std::optional<double> Node::optional_number(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return (*this)[key].as_number();
}

long long Node::required_int(const std::string& key) const {
  if (!has(key))
    fail(key, "missing", "add '" + key + ": <integer>' under '" + (path_.empty() ? "the top level" : path_) + "'");
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

std::optional<double> Node::optional_quantity(const std::string& key, sim::Dimension dim, double bare_scale) const {
  if (!has(key)) return std::nullopt;
  const Node child = (*this)[key];
  const std::string text = child.as_string();
  double v = 0;
  try {
    v = sim::parse_quantity(text, dim, bare_scale);
  } catch (const std::invalid_argument& e) {
    child.fail("", e.what(), std::string("write a ") + sim::dimension_name(dim) + " with its unit");
  }
  if (!std::isfinite(v))  // 1e308 GB/s: past what a double holds once in base units
    child.fail("", "is out of range: " + text, std::string("write a realistic ") + sim::dimension_name(dim));
  return v;
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
  // A file's text is checked as it is read; an override's must be too (outputs are JSON).
  if (!valid_utf8(assignment))
    throw InputError(origin, 0, valid_utf8(key) ? key : std::string("(override)"), "is not valid UTF-8 text",
                     "write the override in UTF-8 (check the terminal's locale)");
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

void rethrow_for_overrides(const InputError& e, const std::vector<std::string>& assignments, const std::string& flag) {
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
