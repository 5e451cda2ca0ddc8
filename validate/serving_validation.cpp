#include "validate/serving_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "validate/serving_cases.hpp"

namespace stacksim::analysis {
namespace {

struct Errors {
  std::vector<double> abs_pct;
  double mape() const {
    double s = 0;
    for (double e : abs_pct) s += e;
    return abs_pct.empty() ? 0 : s / abs_pct.size();
  }
  double max() const { return abs_pct.empty() ? 0 : *std::max_element(abs_pct.begin(), abs_pct.end()); }
};

// class ("throughput"/"latency") -> source -> errors of every figure of that class.
std::map<std::string, std::map<std::string, Errors>> collect(const std::vector<CaseOutcome>& outcomes) {
  std::map<std::string, std::map<std::string, Errors>> t;
  for (const auto& o : outcomes) {
    if (o.kind != "serving" || !o.ok()) continue;
    for (const auto& m : o.metrics)
      t[is_throughput_metric(m.metric) ? "throughput" : "latency"][o.source].abs_pct.push_back(std::fabs(m.error_pct));
  }
  return t;
}

double macro(const std::map<std::string, Errors>& by_source) {
  double s = 0;
  for (const auto& [k, e] : by_source) s += e.mape();
  return by_source.empty() ? 0 : s / by_source.size();
}

}  // namespace

nlohmann::json serving_summary_json(const std::vector<CaseOutcome>& outcomes) {
  nlohmann::json j = nlohmann::json::object();
  size_t refused = 0;
  for (const auto& o : outcomes)
    if (o.kind == "serving" && !o.ok()) ++refused;
  for (const auto& [cls, by_source] : collect(outcomes)) {
    nlohmann::json src = nlohmann::json::object();
    size_t n = 0;
    for (const auto& [k, e] : by_source) {
      src[k] = {{"n", e.abs_pct.size()}, {"mape_pct", e.mape()}, {"max_abs_error_pct", e.max()}};
      n += e.abs_pct.size();
    }
    j[cls] = {{"n", n}, {"macro_mape_pct", macro(by_source)}, {"by_source", src}};
  }
  j["not_buildable"] = refused;
  return j;
}

void print_serving_summary(const std::vector<CaseOutcome>& outcomes, std::ostream& out) {
  char line[256];
  out << "\nserving, every measured figure (throughput: tokens/s and requests/s; latency: TTFT, TPOT, e2e):\n";
  std::snprintf(line, sizeof line, "  %-12s %-30s %5s %9s %9s\n", "figures", "source", "n", "MAPE%", "max%");
  out << line;
  for (const auto& [cls, by_source] : collect(outcomes)) {
    size_t n = 0;
    for (const auto& [src, e] : by_source) {
      std::snprintf(line, sizeof line, "  %-12s %-30s %5zu %9.1f %9.1f\n", cls.c_str(), src.c_str(), e.abs_pct.size(),
                    e.mape(), e.max());
      out << line;
      n += e.abs_pct.size();
    }
    std::snprintf(line, sizeof line, "  %-12s %-30s %5zu   macro MAPE over sources %.1f%%\n", cls.c_str(), "ALL", n,
                  macro(by_source));
    out << line;
  }
}

}  // namespace stacksim::analysis
