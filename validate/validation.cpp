#include "validate/validation.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "config/cases_file.hpp"
#include "config/error.hpp"
#include "config/yaml.hpp"
#include "validate/collective_cases.hpp"
#include "validate/host_cases.hpp"
#include "validate/kernel_cases.hpp"
#include "validate/serving_cases.hpp"
#include "validate/serving_validation.hpp"
#include "validate/training_cases.hpp"

#include <tbb/parallel_for.h>

namespace stacksim::analysis {
namespace {

bool matches(const std::vector<std::string>& wanted, const std::string& value, bool substring) {
  if (wanted.empty()) return true;
  for (const auto& w : wanted)
    if (substring ? value.find(w) != std::string::npos : value == w) return true;
  return false;
}

struct Stats {
  size_t n = 0;
  double sum_abs = 0, max_abs = 0;
  size_t with_interval = 0, inside = 0;  // cases with an 80 % interval, and those it holds
  double mape() const { return n ? sum_abs / n : 0.0; }
  void add(double e) {
    ++n;
    sum_abs += std::fabs(e);
    max_abs = std::max(max_abs, std::fabs(e));
  }
  void add(const CaseOutcome& o) {
    add(o.error_pct);
    if (o.has_interval()) ++with_interval, inside += o.inside();
  }
};

// A case's field that is a plain value, else "" (a map as id: the case fails with a reason).
std::string field_text(const YAML::Node& c, const char* key) {
  if (!c.IsMap() || !c[key] || !c[key].IsScalar()) return "";
  return c[key].Scalar();
}

// nvbandwidth's copy tests: host <-> device over PCIe, device <-> device over NVLink.
bool is_copy_case(const YAML::Node& c) {
  const YAML::Node name = c.IsMap() && c["op"] && c["op"].IsMap() ? c["op"]["name"] : YAML::Node();
  if (!name || !name.IsScalar()) return false;
  const std::string n = name.as<std::string>();
  return n == "h2d" || n == "d2h" || n.rfind("d2d", 0) == 0;
}
}  // namespace

std::vector<CaseOutcome> validate_file(const std::string& cases_path, const ValidationFilter& filter) {
  const config::Node cases = config::load_validation_cases(cases_path);

  std::vector<YAML::Node> selected, all;
  for (size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node c = cases.at(i).yaml();
    all.push_back(c);
    const std::string kind = field_text(c, "kind");
    const std::string source = c.IsMap() && c["source"] ? field_text(c["source"], "key") : "";
    const std::string id = field_text(c, "id");
    if (matches(filter.kinds, kind, false) && matches(filter.sources, source, false) && matches(filter.ids, id, true))
      selected.push_back(c);
  }

  // Cases are independent: predict them in parallel, results land in input order.
  std::vector<CaseOutcome> out(selected.size());
  tbb::parallel_for(size_t(0), selected.size(), [&](size_t i) {
    const YAML::Node& c = selected[i];
    CaseOutcome& o = out[i];
    o.id = field_text(c, "id");
    o.kind = field_text(c, "kind");
    o.source = c.IsMap() && c["source"] ? field_text(c["source"], "key") : "";
    try {
      if (o.kind == "training") {
        predict_training_case(c, o, filter);
      } else if (o.kind == "serving") {
        predict_serving_case(c, o);
      } else if (o.kind == "memory" && is_copy_case(c)) {
        predict_host_copy_case(c, o);
      } else if (o.kind == "gemm" || o.kind == "memory" || o.kind == "attention") {
        const compute::KernelCaseResult r = compute::predict_kernel_case(c);
        o.metric = r.metric;
        o.predicted = r.predicted;
        o.measured = r.measured;
        o.error = r.error;
      } else if (o.kind == "collective") {
        const coll::CollectiveCaseResult r = coll::predict_collective_case(c);
        o.metric = r.metric;
        o.predicted = r.predicted;
        o.measured = r.measured;
        o.error = r.error;
        o.defaults = r.defaults;
      } else if (o.kind == "dataloader") {
        predict_dataloader_case(c, all, o);
      } else {
        o.error = "unknown case kind '" + o.kind + "'";
      }
      if (o.error.empty()) {
        if (!(o.measured > 0) || !std::isfinite(o.measured))
          o.error = "the case has no positive finite measured value for " + o.metric;
        else if (!std::isfinite(o.predicted))
          o.error = "the prediction for " + o.metric + " is not finite (an input out of range)";
        else
          o.error_pct = 100.0 * (o.predicted - o.measured) / o.measured;
      }
    } catch (const std::exception& e) {
      o.error = e.what();
    }
  });
  return out;
}

nlohmann::json validation_json(const std::vector<CaseOutcome>& outcomes) {
  nlohmann::json cases = nlohmann::json::array();
  Stats all;
  std::map<std::string, Stats> by_source, by_kind;
  std::map<std::string, std::map<std::string, Stats>> by_kind_source;
  size_t errors = 0;
  for (const auto& o : outcomes) {
    nlohmann::json j{{"id", o.id}, {"kind", o.kind}, {"source", o.source}, {"metric", o.metric}};
    if (o.ok()) {
      j["predicted"] = o.predicted;
      j["measured"] = o.measured;
      j["error_pct"] = o.error_pct;
      if (o.has_interval()) {
        j["interval"] = {o.interval.first, o.interval.second};
        j["inside"] = o.inside();
      }
      if (!o.family.empty()) j["software"] = o.family;
      all.add(o);
      by_source[o.source].add(o);
      by_kind[o.kind].add(o);
      by_kind_source[o.kind][o.source].add(o);
    } else {
      j["error"] = o.error;
      ++errors;
    }
    if (!o.defaults.empty()) j["defaults"] = o.defaults;
    if (o.ok() && !o.metrics.empty()) {
      nlohmann::json ms = nlohmann::json::array();
      for (const auto& m : o.metrics)
        ms.push_back(
            {{"metric", m.metric}, {"measured", m.measured}, {"predicted", m.predicted}, {"error_pct", m.error_pct}});
      j["metrics"] = ms;
    }
    cases.push_back(j);
  }
  auto stats_json = [](const Stats& s) {
    nlohmann::json j{{"n", s.n}, {"mape_pct", s.mape()}, {"max_abs_error_pct", s.max_abs}};
    if (s.with_interval) j["coverage_80"] = static_cast<double>(s.inside) / s.with_interval;
    return j;
  };
  nlohmann::json src = nlohmann::json::object();
  for (const auto& [k, s] : by_source) src[k] = stats_json(s);
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [k, s] : by_kind) {
    nlohmann::json kj = stats_json(s);
    double macro = 0;
    for (const auto& [source, ss] : by_kind_source[k]) macro += ss.mape();
    kj["macro_mape_pct"] = by_kind_source[k].empty() ? 0.0 : macro / by_kind_source[k].size();
    kinds[k] = kj;
  }
  double macro = 0;
  for (const auto& [k, s] : by_source) macro += s.mape();
  nlohmann::json summary = stats_json(all);
  summary["macro_mape_pct"] = by_source.empty() ? 0.0 : macro / by_source.size();
  summary["not_buildable"] = errors;
  summary["by_source"] = src;
  summary["by_kind"] = kinds;
  if (by_kind.count("serving")) summary["serving"] = serving_summary_json(outcomes);
  return nlohmann::json{{"cases", cases}, {"summary", summary}};
}

void print_validation(const std::vector<CaseOutcome>& outcomes, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%-58s %-10s %-22s %12s %12s %8s\n", "case", "kind", "metric", "predicted",
                "measured", "error%");
  out << line;
  for (const auto& o : outcomes) {
    if (o.ok())
      std::snprintf(line, sizeof line, "%-58.58s %-10s %-22.22s %12.5g %12.5g %+8.1f\n", o.id.c_str(), o.kind.c_str(),
                    o.metric.c_str(), o.predicted, o.measured, o.error_pct);
    else
      std::snprintf(line, sizeof line, "%-58.58s %-10s not buildable: %.120s\n", o.id.c_str(), o.kind.c_str(),
                    o.error.c_str());
    out << line;
    for (size_t m = 1; o.ok() && m < o.metrics.size(); ++m) {  // a serving case's other figures
      std::snprintf(line, sizeof line, "%-58s %-10s %-22.22s %12.5g %12.5g %+8.1f\n", "", "",
                    o.metrics[m].metric.c_str(), o.metrics[m].predicted, o.metrics[m].measured, o.metrics[m].error_pct);
      out << line;
    }
  }
  const nlohmann::json j = validation_json(outcomes);
  const auto& s = j["summary"];
  out << "\nsummary by kind and source (MAPE = mean |error|):\n";
  std::snprintf(line, sizeof line, "  %-12s %-26s %5s %9s %9s\n", "kind", "source", "n", "MAPE%", "max%");
  out << line;
  std::map<std::string, std::map<std::string, Stats>> table;
  for (const auto& o : outcomes)
    if (o.ok()) table[o.kind][o.source].add(o.error_pct);
  for (const auto& [kind, sources] : table) {
    for (const auto& [source, st] : sources) {
      std::snprintf(line, sizeof line, "  %-12s %-26s %5zu %9.1f %9.1f\n", kind.c_str(), source.c_str(), st.n,
                    st.mape(), st.max_abs);
      out << line;
    }
    const auto& kj = s["by_kind"][kind];
    std::snprintf(line, sizeof line, "  %-12s %-26s %5zu %9.1f %9.1f   (macro over sources %.1f%%)\n", kind.c_str(),
                  "ALL", kj["n"].get<size_t>(), kj["mape_pct"].get<double>(), kj["max_abs_error_pct"].get<double>(),
                  kj["macro_mape_pct"].get<double>());
    out << line;
  }
  if (s.contains("serving")) print_serving_summary(outcomes, out);
  std::snprintf(line, sizeof line,
                "  overall: n=%zu MAPE %.1f%% (macro over sources %.1f%%), max %.1f%%, not buildable %zu\n",
                s["n"].get<size_t>(), s["mape_pct"].get<double>(), s["macro_mape_pct"].get<double>(),
                s["max_abs_error_pct"].get<double>(), s["not_buildable"].get<size_t>());
  out << line;
}

}  // namespace stacksim::analysis
