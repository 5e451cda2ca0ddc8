#include "models/analysis/compare.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace stacksim::analysis {
namespace {

std::map<std::string, double> as_map(const TrainingResult& r) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : r.breakdown) m[k] = v;
  return m;
}

// One paragraph: how much faster, which categories moved most, and where the bottleneck went.
std::string explain(const TrainingResult& base, const TrainingResult& var, double speedup) {
  const auto b = as_map(base), v = as_map(var);
  std::string top_cat;
  double top = -1;
  for (const auto& [k, s] : b)
    if (s > top) { top = s; top_cat = k; }
  std::vector<std::pair<double, std::string>> moves;
  for (const auto& [k, s] : b) moves.push_back({std::abs(s - v.at(k)), k});
  std::sort(moves.rbegin(), moves.rend());
  char buf[600];
  std::string moved;
  for (size_t i = 0; i < moves.size() && i < 2; ++i) {
    if (moves[i].first <= 0) break;
    char m[160];
    std::snprintf(m, sizeof m, "%s%s %.3g s -> %.3g s", moved.empty() ? "" : "; ", moves[i].second.c_str(),
                  b.at(moves[i].second), v.at(moves[i].second));
    moved += m;
  }
  std::snprintf(buf, sizeof buf,
                "step %.4g s -> %.4g s (%.2fx). %.0f%% of the baseline step was %s. Largest changes: %s. "
                "Bottleneck: %s -> %s.",
                base.step_time_s, var.step_time_s, speedup, 100 * top / base.step_time_s, top_cat.c_str(),
                moved.empty() ? "none" : moved.c_str(), base.bottleneck.c_str(), var.bottleneck.c_str());
  std::string out = buf;
  if (speedup < 1.05 && speedup > 0.95) out += " The change barely matters: it does not touch what bounds the step.";
  if (var.oom && !base.oom) out += " Warning: the variant does not fit in GPU memory.";
  return out;
}

}  // namespace

Comparison compare(const std::string& path, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity) {
  struct Job {
    Scenario scenario;
    std::string label;
    std::vector<std::string> sets;
  };
  std::vector<Job> jobs;
  const Scenario base = load_scenario(path, base_sets);
  if (base.kind != WorkloadKind::Training)
    throw config::InputError(path, 0, "collective", "compare needs a training scenario",
                             "use a scenario with model: and parallelism:");
  jobs.push_back({base, "baseline", {}});
  for (const auto& v : variants) {
    std::vector<std::string> all = base_sets;
    all.insert(all.end(), v.begin(), v.end());
    std::string label;
    for (const auto& s : v) label += (label.empty() ? "" : ", ") + s;
    jobs.push_back({load_scenario(path, all), label, v});
  }
  const size_t first_elastic = jobs.size();
  if (elasticity) {
    const std::vector<std::pair<std::string, double ResourceScales::*>> classes = {
        {"gpu_flops", &ResourceScales::gpu_flops}, {"hbm_bandwidth", &ResourceScales::hbm},
        {"nvlink", &ResourceScales::nvlink},       {"network", &ResourceScales::network},
        {"pcie", &ResourceScales::pcie},           {"cpu_loader", &ResourceScales::cpu_loader},
        {"storage", &ResourceScales::storage}};
    for (const auto& [name, field] : classes) {
      Job j{base, name, {}};
      j.scenario.training.scales.*field = 2.0;
      jobs.push_back(j);
    }
  }
  std::vector<TrainingResult> results(jobs.size());
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t i) {
    results[i] = simulate_training(jobs[i].scenario.training, RunOptions{});
  });
  Comparison c;
  c.baseline = results[0];
  for (size_t i = 1; i < jobs.size(); ++i) {
    VariantOutcome o;
    o.sets = jobs[i].sets;
    o.label = jobs[i].label;
    o.result = results[i];
    o.speedup = c.baseline.step_time_s / results[i].step_time_s;
    o.reason = explain(c.baseline, results[i], o.speedup);
    (i < first_elastic ? c.variants : c.elasticity).push_back(o);
  }
  std::stable_sort(c.elasticity.begin(), c.elasticity.end(),
                   [](const VariantOutcome& a, const VariantOutcome& b) { return a.speedup > b.speedup; });
  return c;
}

nlohmann::json comparison_json(const Comparison& c) {
  auto run_json = [](const TrainingResult& r) {
    nlohmann::json b = nlohmann::json::object();
    for (const auto& [k, v] : r.breakdown) b[k] = v;
    return nlohmann::json{{"step_time_s", r.step_time_s}, {"tokens_per_s", r.tokens_per_s},
                          {"tflops_per_gpu", r.model_tflops_per_gpu}, {"mfu", r.mfu},
                          {"memory_per_gpu_bytes", r.memory_per_gpu_bytes}, {"oom", r.oom},
                          {"breakdown", b}, {"bottleneck", r.bottleneck}};
  };
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : c.variants) {
    nlohmann::json set = nlohmann::json::object();
    for (const auto& s : v.sets) {
      const auto eq = s.find('=');
      set[s.substr(0, eq)] = s.substr(eq + 1);
    }
    nlohmann::json j = run_json(v.result);
    j["set"] = set;
    j["speedup"] = v.speedup;
    j["goodput_speedup"] = v.result.goodput_tokens_per_s / c.baseline.goodput_tokens_per_s;
    j["reason"] = v.reason;
    variants.push_back(j);
  }
  nlohmann::json el = nlohmann::json::array();
  for (const auto& e : c.elasticity) el.push_back({{"resource", e.label}, {"speedup", e.speedup}});
  return nlohmann::json{{"baseline", run_json(c.baseline)}, {"variants", variants}, {"elasticity", el}};
}

void print_comparison(const Comparison& c, std::ostream& out) {
  char line[300];
  std::vector<const VariantOutcome*> cols;
  for (const auto& v : c.variants) cols.push_back(&v);
  std::snprintf(line, sizeof line, "%-18s %12s", "", "baseline");
  out << line;
  for (size_t i = 0; i < cols.size(); ++i) {
    std::snprintf(line, sizeof line, " %12s", ("variant " + std::to_string(i + 1)).c_str());
    out << line;
  }
  out << "\n";
  auto row = [&](const std::string& name, double base, auto get) {
    std::snprintf(line, sizeof line, "%-18s %12.4g", name.c_str(), base);
    out << line;
    for (const auto* v : cols) {
      std::snprintf(line, sizeof line, " %12.4g", get(*v));
      out << line;
    }
    out << "\n";
  };
  row("step time (s)", c.baseline.step_time_s, [](const VariantOutcome& v) { return v.result.step_time_s; });
  row("tokens/s", c.baseline.tokens_per_s, [](const VariantOutcome& v) { return v.result.tokens_per_s; });
  row("MFU", c.baseline.mfu, [](const VariantOutcome& v) { return v.result.mfu; });
  for (size_t k = 0; k < c.baseline.breakdown.size(); ++k) {
    const auto& [name, base] = c.baseline.breakdown[k];
    bool any = base > 0;
    for (const auto* v : cols) any = any || v->result.breakdown[k].second > 0;
    if (any) row("  " + name, base, [k](const VariantOutcome& v) { return v.result.breakdown[k].second; });
  }
  for (size_t i = 0; i < cols.size(); ++i)
    out << "variant " << i + 1 << " (" << cols[i]->label << "): " << cols[i]->reason << "\n";
  if (!c.elasticity.empty()) {
    out << "elasticity (step speedup if only this resource were 2x faster):\n";
    for (const auto& e : c.elasticity) {
      std::snprintf(line, sizeof line, "  %-14s %.3fx\n", e.label.c_str(), e.speedup);
      out << line;
    }
  }
}

}  // namespace stacksim::analysis
