#include "services/serving_datasets.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "config/yaml.hpp"

namespace stacksim::analysis {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

DatasetLengths parse_lengths(const config::Node& n) {
  n.require_map();
  n.check_keys({"mean", "stdev", "min", "max"});
  DatasetLengths l;
  if (n.has("mean")) l.mean = n.positive("mean", n.required_number("mean"));
  if (n.has("stdev")) l.stdev = n.non_negative("stdev", n.required_number("stdev"));
  if (n.has("min"))
    l.min_tokens = static_cast<long long>(n.positive("min", static_cast<double>(n.required_int("min"))));
  if (n.has("max")) l.max_tokens = n.required_int("max");
  if (l.max_tokens && *l.max_tokens < l.min_tokens) n.fail("max", "is below min", "give max >= min");
  return l;
}

std::vector<ServingDataset> load(const std::string& path) {
  const config::Node root = config::Node::load_file(path);
  root.require_map();
  root.check_keys({"format", "datasets"});
  if (root.required_string("format") != "stacksim-serving-datasets/1")
    root.fail("format", "unknown format", "use format: stacksim-serving-datasets/1");
  const config::Node list = root["datasets"];
  if (!list.is_sequence()) list.fail("", "expected a list of datasets", "write datasets: [- name: ...]");
  std::vector<ServingDataset> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const config::Node d = list.at(i);
    d.check_keys({"name", "aliases", "description", "input", "output", "samples", "tokenizer", "source", "url"});
    ServingDataset s;
    s.name = d.required_string("name");
    const config::Node aliases = d["aliases"];
    for (size_t k = 0; aliases.is_sequence() && k < aliases.size(); ++k) s.aliases.push_back(aliases.at(k).as_string());
    s.description = d.string_or("description", "");
    s.tokenizer = d.string_or("tokenizer", "");
    s.source = d.required_string("source");  // every figure carries its source
    s.url = d.string_or("url", "");
    s.input = parse_lengths(d["input"]);
    s.output = parse_lengths(d["output"]);
    s.samples = d.optional_int("samples").value_or(0);
    out.push_back(std::move(s));
  }
  return out;
}

// Whether `text` starts with `name` followed by a non-name character (or ends there).
bool names(const std::string& text, const std::string& name) {
  const std::string n = lower(name);
  if (text.compare(0, n.size(), n) != 0) return false;
  if (text.size() == n.size()) return true;
  const char next = text[n.size()];
  return !(std::isalnum(static_cast<unsigned char>(next)) || next == '_' || next == '-' || next == '.');
}

}  // namespace

std::string default_serving_datasets_path() {
  if (const char* env = std::getenv("STACKSIM_SERVING_DATASETS")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/workload/serving_datasets.yaml";
}

const std::vector<ServingDataset>& bundled_serving_datasets() {
  static const std::vector<ServingDataset> table = load(default_serving_datasets_path());
  return table;
}

const ServingDataset* find_serving_dataset(const std::string& raw) {
  std::string text = lower(raw);
  text.erase(0, text.find_first_not_of(" \t"));
  for (const auto& d : bundled_serving_datasets()) {
    if (names(text, d.name)) return &d;
    for (const auto& a : d.aliases)
      if (names(text, a)) return &d;
  }
  return nullptr;
}

namespace {

// Mean of the exponential distribution of rate `lambda` truncated to [a, b].
double truncated_exponential_mean(double lambda, double a, double b) {
  const double w = b - a, e = std::exp(-lambda * w);
  return a + 1 / lambda - w * e / (1 - e);
}

// The maximum-entropy distribution on [a, b] with mean m (a truncated exponential, decreasing for
// m below the midpoint) as a 64-bin histogram; uniform when m is at or above the midpoint.
serving::LengthDist max_entropy_lengths(double m, long long a, long long b) {
  serving::LengthDist d;
  d.kind = serving::LengthDist::Kind::Histogram;
  d.min_tokens = a;
  d.max_tokens = b;
  d.mean_tokens = m;
  const double lo = static_cast<double>(a), hi = static_cast<double>(b);
  double lambda = 0;
  if (m < 0.5 * (lo + hi) - 0.5) {
    double l = 1e-12, h = 1.0;
    while (truncated_exponential_mean(h, lo, hi) > m && h < 1e6) h *= 2;
    for (int i = 0; i < 200; ++i) {
      const double mid = 0.5 * (l + h);
      (truncated_exponential_mean(mid, lo, hi) > m ? l : h) = mid;
    }
    lambda = 0.5 * (l + h);
  }
  const int bins = 64;
  const auto cdf = [&](double x) {
    return lambda > 0 ? (1 - std::exp(-lambda * (x - lo))) / (1 - std::exp(-lambda * (hi - lo))) : (x - lo) / (hi - lo);
  };
  double prev_edge = lo - 1;
  for (int i = 1; i <= bins; ++i) {
    const long long edge = i == bins ? b : static_cast<long long>(std::llround(lo + (hi - lo) * i / bins));
    if (static_cast<double>(edge) <= prev_edge) continue;
    const double w = cdf(static_cast<double>(edge)) - cdf(std::max(prev_edge, lo));
    d.bins.push_back({edge, std::max(w, 0.0)});
    prev_edge = static_cast<double>(edge);
  }
  return d;
}

}  // namespace

std::optional<serving::LengthDist> dataset_length_dist(const DatasetLengths& l) {
  if (!l.mean) return std::nullopt;
  serving::LengthDist d;
  d.min_tokens = l.min_tokens;
  if (l.max_tokens) d.max_tokens = *l.max_tokens;
  d.mean_tokens = std::round(*l.mean);
  if (l.stdev && *l.stdev > 0) {
    d.kind = serving::LengthDist::Kind::Normal;
    d.mean_tokens = *l.mean;
    d.stddev_tokens = *l.stdev;
  } else if (l.max_tokens && *l.max_tokens > l.min_tokens && *l.mean > static_cast<double>(l.min_tokens) &&
             *l.mean < static_cast<double>(*l.max_tokens)) {
    return max_entropy_lengths(*l.mean, l.min_tokens, *l.max_tokens);  // the spread is not published
  }
  return d;
}

}  // namespace stacksim::analysis
