#include "services/compare.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace stacksim::analysis {
namespace {

std::map<std::string, double> as_map(const TrainingResult& r) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : r.breakdown) m[k] = v;
  return m;
}

std::string capitalised(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

// The breakdown category whose time moved most in one direction (sign +1: shrank, -1: grew), or
// "" when none moved by more than 1 % of the baseline step (noise, not a cause).
std::string largest_move(const std::map<std::string, double>& b, const std::map<std::string, double>& v, double sign,
                         double base_step_s) {
  std::string best;
  double most = 0.01 * base_step_s;
  for (const auto& [k, s] : b)
    if (sign * (s - v.at(k)) > most) {
      most = sign * (s - v.at(k));
      best = k;
    }
  return best;
}

// Kernel time gets faster or slower; waits (exposed communication, bubbles, data) shrink or grow.
bool is_compute(const std::string& category) {
  return category == "gemm" || category == "attention" || category == "elementwise" || category == "optimizer";
}

// "GEMM compute got 2.21x faster (gemm 0.612 s -> 0.277 s)", "waiting for the data loader grew
// 1.52x (data_wait 1.01 s -> 1.53 s)"
std::string describe_move(const TrainingResult& base, const TrainingResult& var, const std::string& k, double base_s,
                          double var_s) {
  char buf[240];
  const std::string what = category_label(var_s >= base_s ? var : base, k);
  if (var_s <= 0) {
    std::snprintf(buf, sizeof buf, "%s disappeared (%s %.3g s -> 0)", what.c_str(), k.c_str(), base_s);
  } else if (base_s <= 0) {
    std::snprintf(buf, sizeof buf, "%s appeared (%s 0 -> %.3g s)", what.c_str(), k.c_str(), var_s);
  } else {
    const bool shrank = base_s > var_s;
    const char* verb =
        is_compute(k) ? (shrank ? "got %.2fx faster" : "got %.2fx slower") : (shrank ? "shrank %.2fx" : "grew %.2fx");
    char move[40];
    std::snprintf(move, sizeof move, verb, shrank ? base_s / var_s : var_s / base_s);
    std::snprintf(buf, sizeof buf, "%s %s (%s %.3g s -> %.3g s)", what.c_str(), move, k.c_str(), base_s, var_s);
  }
  return buf;
}

// The reason in plain words, a deterministic function of the two results: how much faster, what
// got faster (or slower), what bounds the variant's step, the bottleneck shift, the cost change.
std::string explain(const TrainingResult& base, const TrainingResult& var, double speedup) {
  const auto b = as_map(base), v = as_map(var);
  char buf[400];
  std::string out;
  if (speedup >= 1.005)
    std::snprintf(buf, sizeof buf, "%.2fx faster (step %.4g s -> %.4g s).", speedup, base.step_time_s, var.step_time_s);
  else if (speedup <= 0.995)
    std::snprintf(buf, sizeof buf, "%.2fx slower (step %.4g s -> %.4g s).", 1 / speedup, base.step_time_s,
                  var.step_time_s);
  else
    std::snprintf(buf, sizeof buf, "About the same speed (%.3fx, step %.4g s -> %.4g s).", speedup, base.step_time_s,
                  var.step_time_s);
  out = buf;

  const std::string faster = largest_move(b, v, +1, base.step_time_s);
  const std::string slower = largest_move(b, v, -1, base.step_time_s);
  std::string bound;  // the variant's largest category
  for (const auto& [k, s] : var.breakdown)
    if (bound.empty() || s > v.at(bound)) bound = k;
  const double share_pct = 100 * v.at(bound) / var.step_time_s;
  if (!faster.empty()) out += " " + capitalised(describe_move(base, var, faster, b.at(faster), v.at(faster)));
  if (!slower.empty())
    out += faster.empty() ? " " + capitalised(describe_move(base, var, slower, b.at(slower), v.at(slower)))
                          : "; " + describe_move(base, var, slower, b.at(slower), v.at(slower));
  const bool untouched = std::abs(b.at(bound) - v.at(bound)) < 0.05 * b.at(bound);
  if (bound == faster) {
    std::snprintf(buf, sizeof buf, "%s still takes %.0f%% of the step.",
                  slower.empty() ? ", and it" : ("; " + category_label(var, bound)).c_str(), share_pct);
  } else if (untouched) {
    std::snprintf(buf, sizeof buf, "%s %.0f%% of the step is %s (%s %.3g s), which the change does not touch.",
                  faster.empty() && slower.empty() ? "" : ", but", share_pct, category_label(var, bound).c_str(),
                  bound.c_str(), v.at(bound));
  } else {
    std::snprintf(buf, sizeof buf, "%s %.0f%% of the step is now %s (%s %.3g s).",
                  faster.empty() && slower.empty() ? "" : ";", share_pct, category_label(var, bound).c_str(),
                  bound.c_str(), v.at(bound));
  }
  out += buf;
  out += base.bottleneck == var.bottleneck ? " Bottleneck unchanged: " + var.bottleneck + "."
                                           : " Bottleneck: " + base.bottleneck + " -> " + var.bottleneck + ".";
  // Breakdowns are the pacing stage's; when that stage changes they describe different GPUs.
  if (base.critical_stage != var.critical_stage) {
    std::snprintf(buf, sizeof buf,
                  " (The pacing pipeline stage moved from %d to %d: the breakdowns are of different GPUs.)",
                  base.critical_stage, var.critical_stage);
    out += buf;
  }
  if (base.usd_per_million_tokens > 0 && var.usd_per_million_tokens > 0) {
    std::snprintf(buf, sizeof buf, " Cost per million tokens $%.4g -> $%.4g (%+.0f%%).", base.usd_per_million_tokens,
                  var.usd_per_million_tokens, cost_change_pct(base, var));
    out += buf;
  }
  if (var.oom && !base.oom) out += " Warning: the variant does not fit in GPU memory.";
  return out;
}

}  // namespace

Comparison compare(const std::string& path, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity) {
  return compare([&path](const std::vector<std::string>& sets) { return load_scenario(path, sets); }, path, base_sets,
                 variants, elasticity);
}

Comparison compare(const ScenarioLoader& load, const std::string& origin, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity) {
  struct Job {
    Scenario scenario;
    std::string label;
    std::vector<std::string> sets;
  };
  std::vector<Job> jobs;
  const Scenario base = load(base_sets);
  if (base.kind != WorkloadKind::Training)
    throw config::InputError(origin, 0, "collective", "compare needs a training scenario",
                             "use a scenario with model: and parallelism:");
  jobs.push_back({base, "baseline", {}});
  for (const auto& v : variants) {
    std::vector<std::string> all = base_sets;
    all.insert(all.end(), v.begin(), v.end());
    std::string label;
    for (const auto& s : v) label += (label.empty() ? "" : ", ") + s;
    jobs.push_back({load(all), label, v});
  }
  const size_t first_elastic = jobs.size();
  if (elasticity) {
    const std::vector<std::pair<std::string, double ResourceScales::*>> classes = {
        {"gpu_flops", &ResourceScales::gpu_flops},
        {"hbm_bandwidth", &ResourceScales::hbm},
        {"nvlink", &ResourceScales::nvlink},
        {"network", &ResourceScales::network},
        {"pcie", &ResourceScales::pcie},
        {"cpu_loader", &ResourceScales::cpu_loader},
        {"storage", &ResourceScales::storage},
        {"host_launch", &ResourceScales::host_launch},
        {"host_memory", &ResourceScales::host_memory}};
    for (const auto& [name, field] : classes) {
      Job j{base, name, {}};
      j.scenario.training.scales.*field = 2.0;
      jobs.push_back(j);
    }
  }
  std::vector<TrainingResult> results(jobs.size());
  std::atomic<size_t> simulations{0};
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t i) {
    results[i] = simulate_training(jobs[i].scenario.training, RunOptions::step_only());
    ++simulations;
  });
  Comparison c;
  c.simulations = simulations;
  c.baseline = results[0];
  for (size_t i = 1; i < jobs.size(); ++i) {
    VariantOutcome o;
    o.sets = jobs[i].sets;
    o.label = jobs[i].label;
    o.result = results[i];
    o.speedup = c.baseline.step_time_s / results[i].step_time_s;
    o.reason = explain(c.baseline, results[i], o.speedup);
    o.speedup_interval = speedup_interval(c.baseline, results[i], o.speedup);
    (i < first_elastic ? c.variants : c.elasticity).push_back(o);
  }
  std::stable_sort(c.elasticity.begin(), c.elasticity.end(),
                   [](const VariantOutcome& a, const VariantOutcome& b) { return a.speedup > b.speedup; });
  return c;
}

namespace {

// An override's value as JSON: numbers and booleans typed (as the scenario reads them), else text.
nlohmann::json typed_value(const std::string& text) {
  if (text == "true" || text == "false") return text == "true";
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x)) return text;
  if (x == std::floor(x) && std::abs(x) < 9.0e15) return static_cast<long long>(x);
  return x;
}

}  // namespace

std::pair<double, double> speedup_interval(const TrainingResult& base, const TrainingResult& var, double speedup) {
  if (!base.band.known || !var.band.known) return {0, 0};
  // speedup measured = speedup predicted x exp(r_base - r_variant), r = log(measured / predicted).
  if (base.stack_fitted == var.stack_fitted)
    return {speedup * std::exp(base.band.pair_lo_log), speedup * std::exp(base.band.pair_hi_log)};
  return {speedup * std::exp(base.band.lo_log - var.band.hi_log),
          speedup * std::exp(base.band.hi_log - var.band.lo_log)};
}

double cost_change_pct(const TrainingResult& base, const TrainingResult& var) {
  return 100 * (var.usd_per_million_tokens / base.usd_per_million_tokens - 1);
}

nlohmann::json comparison_json(const Comparison& c) {
  const bool priced = c.baseline.usd_per_million_tokens > 0;
  auto run_json = [priced](const TrainingResult& r) {
    nlohmann::json b = nlohmann::json::object();
    for (const auto& [k, v] : r.breakdown) b[k] = v;
    nlohmann::json j{{"step_time_s", r.step_time_s},
                     {"tokens_per_s", r.tokens_per_s},
                     {"goodput_tokens_per_s", r.goodput_tokens_per_s},
                     {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                     {"tflops_per_gpu", r.model_tflops_per_gpu},
                     {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
                     {"mfu", r.mfu},
                     {"memory_per_gpu_bytes", r.memory_per_gpu_bytes},
                     {"oom", r.oom},
                     {"breakdown", b},
                     {"bottleneck", r.bottleneck}};
    if (priced) {
      j["usd_per_hour"] = r.usd_per_hour;
      j["usd_per_million_tokens"] = r.usd_per_million_tokens;
    }
    return j;
  };
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : c.variants) {
    nlohmann::json set = nlohmann::json::object();
    for (const auto& s : v.sets) {
      const auto eq = s.find('=');
      set[s.substr(0, eq)] = typed_value(s.substr(eq + 1));
    }
    nlohmann::json j = run_json(v.result);
    j["set"] = set;
    j["speedup"] = v.speedup;
    if (v.speedup_interval.second > 0) j["speedup_interval"] = {v.speedup_interval.first, v.speedup_interval.second};
    j["goodput_speedup"] = v.result.goodput_tokens_per_s / c.baseline.goodput_tokens_per_s;
    j["reason"] = v.reason;
    if (priced) j["cost_change_pct"] = cost_change_pct(c.baseline, v.result);
    variants.push_back(j);
  }
  nlohmann::json el = nlohmann::json::array();
  for (const auto& e : c.elasticity) {
    nlohmann::json j{{"resource", e.label}, {"speedup", e.speedup}};
    if (priced) j["usd_per_million_tokens"] = e.result.usd_per_million_tokens;
    el.push_back(j);
  }
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
  if (c.baseline.usd_per_million_tokens > 0)
    row("$/M tokens", c.baseline.usd_per_million_tokens,
        [](const VariantOutcome& v) { return v.result.usd_per_million_tokens; });
  for (size_t k = 0; k < c.baseline.breakdown.size(); ++k) {
    const auto& [name, base] = c.baseline.breakdown[k];
    bool any = base > 0;
    for (const auto* v : cols) any = any || v->result.breakdown[k].second > 0;
    if (any) row("  " + name, base, [k](const VariantOutcome& v) { return v.result.breakdown[k].second; });
  }
  for (size_t i = 0; i < cols.size(); ++i) {
    out << "variant " << i + 1 << " (" << cols[i]->label << "): " << cols[i]->reason;
    if (cols[i]->speedup_interval.second > 0) {
      std::snprintf(line, sizeof line, " Speedup 80%% interval %.3fx to %.3fx.", cols[i]->speedup_interval.first,
                    cols[i]->speedup_interval.second);
      out << line;
    }
    out << "\n";
  }
  if (!c.elasticity.empty()) {
    out << "elasticity (step speedup if only this resource were 2x faster):\n";
    for (const auto& e : c.elasticity) {
      std::snprintf(line, sizeof line, "  %-14s %.3fx", e.label.c_str(), e.speedup);
      out << line;
      if (e.result.usd_per_million_tokens > 0) {
        std::snprintf(line, sizeof line, "  $%.4g per million tokens at the baseline's prices",
                      e.result.usd_per_million_tokens);
        out << line;
      }
      out << "\n";
    }
  }
}

}  // namespace stacksim::analysis
