// `stacksim compare` on a serving scenario: the baseline and each variant replayed (in parallel,
// into a pre-sized vector: the output does not depend on the thread count), ranked by the primary
// figure, with the reason in plain words: what moved (KV capacity, running batch, preemptions,
// step time by category) and the bottleneck shift. Elasticity: one resource class 2x faster.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "services/serving_commands.hpp"

namespace stacksim::analysis {
namespace {

std::string ratio_text(double a, double b) {
  char buf[64];
  if (a <= 0 || b <= 0) return "";
  std::snprintf(buf, sizeof buf, "%.2fx", b / a);
  return buf;
}

// Plain words, a deterministic function of the two runs.
std::string explain(const ServingComparison& c, const ServingRun& base, const ServingRun& var, double speedup) {
  char buf[400];
  std::string out;
  const serving::ServingResult &b = base.result, &v = var.result;
  if (speedup >= 1.005)
    std::snprintf(buf, sizeof buf, "%.2fx more %s.", speedup, c.figure.c_str());
  else if (speedup <= 0.995 && speedup > 0)
    std::snprintf(buf, sizeof buf, "%.2fx less %s.", 1 / speedup, c.figure.c_str());
  else
    std::snprintf(buf, sizeof buf, "About the same %s (%.3fx).", c.figure.c_str(), speedup);
  out = buf;
  const double kb = static_cast<double>(b.memory.kv_capacity_tokens),
               kv = static_cast<double>(v.memory.kv_capacity_tokens);
  if (kb > 0 && kv > 0 && std::fabs(kv / kb - 1) > 0.05) {
    std::snprintf(buf, sizeof buf, " KV-cache capacity %.3g -> %.3g tokens per instance (%s)", kb, kv,
                  ratio_text(kb, kv).c_str());
    out += buf;
    if (std::fabs(v.mean_running_seqs / std::max(b.mean_running_seqs, 1e-9) - 1) > 0.05) {
      std::snprintf(buf, sizeof buf, ": %.1f -> %.1f sequences per engine step", b.mean_running_seqs,
                    v.mean_running_seqs);
      out += buf;
    }
    out += ".";
  }
  if (b.preemptions != v.preemptions && (b.preemptions > 0 || v.preemptions > 0)) {
    std::snprintf(buf, sizeof buf, " Preemptions %lld -> %lld.", b.preemptions, v.preemptions);
    out += buf;
  }
  // The step category whose time per output token moved most.
  std::string moved;
  double most = 0, from = 0, to = 0;
  const double nb = std::max<double>(b.output_tokens, 1), nv = std::max<double>(v.output_tokens, 1);
  for (const auto& [k, sb] : b.step_seconds) {
    const auto it = v.step_seconds.find(k);
    const double sv = it == v.step_seconds.end() ? 0 : it->second;
    const double d = std::fabs(sv / nv - sb / nb);
    if (d > most) {
      most = d;
      moved = k;
      from = sb / nb;
      to = sv / nv;
    }
  }
  double total = 0;
  for (const auto& [k, s] : b.step_seconds) total += s;
  if (!moved.empty() && most > 0.02 * total / nb) {
    std::snprintf(buf, sizeof buf, " %s per output token %.3g -> %.3g ms.", serving_category_label(moved).c_str(),
                  1e3 * from, 1e3 * to);
    std::string s = buf;
    s[1] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[1])));
    out += s;
  }
  out += b.bottleneck == v.bottleneck ? " Bottleneck unchanged: " + v.bottleneck + "."
                                      : " Bottleneck: " + b.bottleneck + " -> " + v.bottleneck + ".";
  if (base.usd_per_million_output_tokens > 0 && var.usd_per_million_output_tokens > 0) {
    std::snprintf(buf, sizeof buf, " Cost per million output tokens $%.4g -> $%.4g.",
                  base.usd_per_million_output_tokens, var.usd_per_million_output_tokens);
    out += buf;
  }
  return out;
}

nlohmann::json run_json(const ServingRun& r) {
  const serving::ServingResult& x = r.result;
  nlohmann::json j{{"output_tokens_per_s", x.output_tokens_per_s},
                   {"requests_per_s", x.requests_per_s},
                   {"goodput_requests_per_s", x.goodput_requests_per_s},
                   {"ttft_ms_p99", x.ttft_ms.p99},
                   {"tpot_ms_p99", x.tpot_ms.p99},
                   {"kv_capacity_tokens", x.memory.kv_capacity_tokens},
                   {"mean_running_seqs", x.mean_running_seqs},
                   {"preemptions", x.preemptions},
                   {"bottleneck", x.bottleneck}};
  if (r.searched) j["max_rate_under_slo_per_s"] = r.rate.feasible ? r.rate.max_rate_per_s : 0.0;
  if (r.usd_per_hour > 0) j["usd_per_million_tokens"] = r.usd_per_million_output_tokens;
  return j;
}

}  // namespace

double serving_primary_figure(const ServingRun& r) {
  if (r.searched) return r.rate.feasible ? r.rate.max_rate_per_s : 0.0;
  return r.result.output_tokens_per_s;
}

ServingComparison compare_serving(const std::string& path, const std::vector<std::vector<std::string>>& variants,
                                  bool elasticity) {
  struct Job {
    Scenario scenario;
    std::string label;
    std::vector<std::string> sets;
  };
  std::vector<Job> jobs;
  const Scenario base = load_scenario(path, {});
  jobs.push_back({base, "baseline", {}});
  for (const auto& v : variants) {
    std::string label;
    for (const auto& s : v) label += (label.empty() ? "" : ", ") + s;
    const Scenario sv = load_scenario(path, v);
    if (sv.kind != WorkloadKind::Serving)
      throw config::InputError(path, 0, "serving", "the variant (" + label + ") is not a serving scenario",
                               "compare serving scenarios with serving variants");
    jobs.push_back({sv, label, v});
  }
  const size_t first_elastic = jobs.size();
  if (elasticity) {
    const std::vector<std::pair<std::string, double ServingSetup::*>> classes = {
        {"gpu_flops", &ServingSetup::scale_gpu_flops},
        {"hbm_bandwidth", &ServingSetup::scale_hbm},
        {"nvlink", &ServingSetup::scale_nvlink},
        {"network", &ServingSetup::scale_network},
        {"host", &ServingSetup::scale_host}};
    for (const auto& [name, field] : classes) {
      Job j{base, name, {}};
      j.scenario.serving.*field = 2.0;
      jobs.push_back(j);
    }
  }
  std::vector<ServingRun> runs(jobs.size());
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t i) { runs[i] = run_serving(jobs[i].scenario.serving); });
  // One figure for every column: the max rate under the SLO only when every run has an SLO (a
  // variant may drop it with slo=null), else output tokens/s.
  const bool by_rate = std::all_of(runs.begin(), runs.end(), [](const ServingRun& r) { return r.searched; });
  if (!by_rate)
    for (auto& r : runs) r.searched = false;
  ServingComparison c;
  c.figure = by_rate ? "sustainable request rate under the SLO" : "output tokens/s";
  c.baseline = runs[0];
  const double b = serving_primary_figure(runs[0]);
  for (size_t i = 1; i < jobs.size(); ++i) {
    ServingVariant v;
    v.sets = jobs[i].sets;
    v.label = jobs[i].label;
    v.run = runs[i];
    v.speedup = b > 0 ? serving_primary_figure(runs[i]) / b : 0;
    v.reason = explain(c, c.baseline, runs[i], v.speedup);
    (i < first_elastic ? c.variants : c.elasticity).push_back(v);
  }
  std::stable_sort(c.elasticity.begin(), c.elasticity.end(),
                   [](const ServingVariant& x, const ServingVariant& y) { return x.speedup > y.speedup; });
  return c;
}

nlohmann::json serving_comparison_json(const ServingComparison& c) {
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : c.variants) {
    nlohmann::json j = run_json(v.run);
    nlohmann::json set = nlohmann::json::object();
    for (const auto& s : v.sets) set[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
    j["set"] = set;
    j["speedup"] = v.speedup;
    j["reason"] = v.reason;
    variants.push_back(j);
  }
  nlohmann::json el = nlohmann::json::array();
  for (const auto& e : c.elasticity) el.push_back({{"resource", e.label}, {"speedup", e.speedup}});
  return nlohmann::json{{"kind", "serving"},
                        {"figure", c.figure},
                        {"baseline", run_json(c.baseline)},
                        {"variants", variants},
                        {"elasticity", el}};
}

void print_serving_comparison(const ServingComparison& c, std::ostream& out) {
  char line[300];
  std::snprintf(line, sizeof line, "%-28s %12s", "", "baseline");
  out << line;
  for (size_t i = 0; i < c.variants.size(); ++i) {
    std::snprintf(line, sizeof line, " %12s", ("variant " + std::to_string(i + 1)).c_str());
    out << line;
  }
  out << "\n";
  const auto row = [&](const char* name, auto get) {
    std::snprintf(line, sizeof line, "%-28s %12.4g", name, get(c.baseline));
    out << line;
    for (const auto& v : c.variants) {
      std::snprintf(line, sizeof line, " %12.4g", get(v.run));
      out << line;
    }
    out << "\n";
  };
  if (c.baseline.searched)
    row("max rate under SLO (req/s)", [](const ServingRun& r) { return serving_primary_figure(r); });
  row("output tokens/s", [](const ServingRun& r) { return r.result.output_tokens_per_s; });
  row("requests/s", [](const ServingRun& r) { return r.result.requests_per_s; });
  row("TTFT p99 (ms)", [](const ServingRun& r) { return r.result.ttft_ms.p99; });
  row("TPOT p99 (ms)", [](const ServingRun& r) { return r.result.tpot_ms.p99; });
  row("KV capacity (tokens)",
      [](const ServingRun& r) { return static_cast<double>(r.result.memory.kv_capacity_tokens); });
  row("sequences per step", [](const ServingRun& r) { return r.result.mean_running_seqs; });
  row("preemptions", [](const ServingRun& r) { return static_cast<double>(r.result.preemptions); });
  if (c.baseline.usd_per_hour > 0)
    row("$/M output tokens", [](const ServingRun& r) { return r.usd_per_million_output_tokens; });
  for (size_t i = 0; i < c.variants.size(); ++i)
    out << "variant " << i + 1 << " (" << c.variants[i].label << "): " << c.variants[i].reason << "\n";
  if (!c.elasticity.empty()) {
    out << "elasticity (" << c.figure << " if only this resource were 2x faster):\n";
    for (const auto& e : c.elasticity) {
      std::snprintf(line, sizeof line, "  %-14s %.3fx\n", e.label.c_str(), e.speedup);
      out << line;
    }
  }
}

}  // namespace stacksim::analysis
