#include "services/plan_search.hpp"

#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <numeric>
#include <optional>

#include "config/error.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/workload/memory.hpp"
#include "services/plan_space.hpp"
#include "services/progress.hpp"
#include "services/scenario.hpp"

namespace stacksim::analysis {
namespace {

std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = (i + j) / 2.0;  // ties share their mean rank
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0.0;
  const std::vector<double> ra = ranks_of(a), rb = ranks_of(b);
  const double n = static_cast<double>(a.size()), mean = (n - 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

PlanSearchResult search_plans(FastTier& tier, std::vector<PlanPoint> points, size_t enumerated,
                              const PlanSearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanSearchResult out;
  out.enumerated = enumerated;
  out.evaluated = points.size();
  // Stage 1: memory, then the fast tier, in parallel; each result lands at its plan's index.
  std::vector<PlanCandidate> all(points.size());
  std::vector<char> ok(points.size(), 0);
  {
    Progress bar(options.progress, "fast tier", points.size());
    tbb::parallel_for(size_t(0), points.size(), [&](size_t i) {
      PlanCandidate& c = all[i];
      c.plan = points[i].plan;
      c.sets = std::move(points[i].sets);
      const workload::MemoryFootprint mem = workload::memory_per_gpu(tier.base().model, c.plan);
      c.memory_per_gpu_bytes = mem.total_bytes();
      if (!workload::out_of_memory(mem, tier.gpu_memory_bytes())) {
        try {
          c.fast = tier.estimate(c.plan);
          ok[i] = std::isfinite(c.fast.step_time_s) && c.fast.step_time_s > 0;
        } catch (const config::InputError&) {
        } catch (const std::invalid_argument&) {
        }
      }
      bar.tick();
    });
  }
  std::vector<PlanCandidate> fit;
  for (size_t i = 0; i < all.size(); ++i)
    if (ok[i]) fit.push_back(std::move(all[i]));
  out.fit = fit.size();
  std::stable_sort(fit.begin(), fit.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.fast.step_time_s < b.fast.step_time_s;
  });
  out.fast_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Stage 2: the replay confirms the fast tier's best k (and, if asked, a sample of the rest).
  const size_t k = std::min(options.replay_top, fit.size());
  std::vector<size_t> replay;
  for (size_t i = 0; i < fit.size(); ++i) {
    const size_t stride = options.replay_sample ? (fit.size() + options.replay_sample - 1) / options.replay_sample : 0;
    if (i < k || (stride && i % stride == 0)) replay.push_back(i);
  }
  {
    Progress bar(options.progress, "replaying", replay.size());
    tbb::parallel_for(size_t(0), replay.size(), [&](size_t j) {
      PlanCandidate& c = fit[replay[j]];
      try {
        c.result = simulate_training(tier.setup_for(c.plan), RunOptions::step_only());
        c.replayed = !c.result.oom;
      } catch (const config::InputError&) {
      } catch (const sim::HorizonError&) {
        // A plan whose step would outlast the engine's horizon: not confirmed.
      }
      bar.tick();
    });
  }
  for (const PlanCandidate& c : fit) out.replayed += c.replayed;
  // The confirmed best k first, by their replayed step time; the rest as the fast tier ranks them.
  std::stable_sort(fit.begin(), fit.begin() + k, [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.replayed != b.replayed) return a.replayed;
    return a.replayed ? a.result.step_time_s < b.result.step_time_s : a.fast.step_time_s < b.fast.step_time_s;
  });
  out.plans = std::move(fit);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

PlanSearchResult search_plans(const Scenario& s, const PlanSearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (s.kind != WorkloadKind::Training)
    throw config::InputError(s.file, 0, "model", "plan search needs a training scenario (model:, parallelism:)",
                             "use a training scenario such as scenarios/llama3-70b-64xh100.yaml");
  FastTier tier(s.training);
  size_t enumerated = 0;
  std::vector<PlanPoint> points = enumerate_plans(s, tier.gpu_memory_bytes(), &enumerated);
  PlanSearchResult r = search_plans(tier, std::move(points), enumerated, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Scenario load_for_plan_search(YAML::Node root, const std::string& path, const std::string& base_dir) {
  // The scenario's own plan need not be valid here (the search replaces it); recompute_modules
  // stay for the selective mode the search tries.
  YAML::Node plan = root["parallelism"];
  if (plan.IsMap() && plan["recompute_modules"] && plan["recompute"] && plan["recompute"].IsScalar() &&
      plan["recompute"].as<std::string>() != "auto")
    plan["recompute"] = "selective";
  if (plan.IsMap() && plan["recompute_layers"]) plan.remove("recompute_layers");
  return scenario_from_yaml(root, path, base_dir, false);
}

PlanSearchResult search_plans(const std::string& path, const std::vector<std::string>& base_sets,
                              const PlanSearchOptions& options) {
  const config::Node file = config::Node::load_file(path);
  YAML::Node root = file.yaml();
  for (const auto& o : base_sets) apply_scenario_override(root, o, "--set " + o);
  if (config::Node(root, path, "").has("serving"))
    config::Node(root, path, "")
        .fail("serving", "plan searches training plans; a serving deployment is not searched by it",
              "compare serving layouts with stacksim sweep over serving.tp, serving.replicas, ... "
              "(docs/serving.md)");
  const std::string base = std::filesystem::path(path).parent_path().string();
  try {
    return search_plans(load_for_plan_search(root, path, base.empty() ? "." : base), options);
  } catch (const config::InputError& e) {
    config::rethrow_for_overrides(e, base_sets, "--set");
  }
}

void print_plans(const PlanSearchResult& r, size_t top, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%zu plans valid, %zu fit in memory and were ranked by the fast tier, the best %zu replayed "
                "(%.1f s); the fastest:\n",
                r.evaluated, r.fit, r.replayed, r.seconds);
  out << line;
  for (size_t i = 0; i < r.plans.size() && i < top; ++i) {
    const PlanCandidate& c = r.plans[i];
    std::string desc = plan_label(c.sets);
    if (c.replayed) {
      const TrainingResult& t = c.result;
      const double err = 100 * (c.fast.step_time_s - t.step_time_s) / t.step_time_s;
      std::snprintf(line, sizeof line,
                    "%2zu. step %.4g s (fast tier %.4g s, %+.1f%%)  MFU %.1f%%  mem %.1f GB  bottleneck: %s\n    %s\n",
                    i + 1, t.step_time_s, c.fast.step_time_s, err, 100 * t.mfu, c.memory_per_gpu_bytes / 1e9,
                    t.bottleneck.c_str(), desc.c_str());
      out << line;
      std::string bd = "    ";
      for (const auto& [k, v] : t.breakdown)
        if (v > 0.005 * t.step_time_s) {
          std::snprintf(line, sizeof line, "%s %.0f%%  ", k.c_str(), 100 * v / t.step_time_s);
          bd += line;
        }
      out << bd << "\n";
    } else {
      std::snprintf(line, sizeof line, "%2zu. fast tier %.4g s (not replayed)  MFU %.1f%%  mem %.1f GB\n    %s\n",
                    i + 1, c.fast.step_time_s, 100 * c.fast.mfu, c.memory_per_gpu_bytes / 1e9, desc.c_str());
      out << line;
    }
  }
  // The fast tier's error on the replayed plans.
  double worst = 0, sum = 0;
  size_t n = 0;
  for (const PlanCandidate& c : r.plans)
    if (c.replayed) {
      const double e = std::abs(c.fast.step_time_s - c.result.step_time_s) / c.result.step_time_s;
      worst = std::max(worst, e), sum += e, ++n;
    }
  if (n) {
    std::snprintf(line, sizeof line, "fast tier vs replay on the %zu replayed plans: mean error %.1f%%, worst %.1f%%\n",
                  n, 100 * sum / n, 100 * worst);
    out << line;
  }
}

nlohmann::json plans_json(const PlanSearchResult& r) {
  nlohmann::json plans = nlohmann::json::array();
  for (const PlanCandidate& c : r.plans) {
    const workload::ParallelPlan& p = c.plan;
    nlohmann::json j{{"tp", p.tp},
                     {"pp", p.pp},
                     {"dp", p.dp},
                     {"cp", p.cp},
                     {"vp", p.vp},
                     {"ep", p.ep},
                     {"etp", p.expert_tp()},
                     {"micro_batch", p.micro_batch},
                     {"recompute", workload::recompute_name(p.recompute)},
                     {"recompute_layers", p.recompute_layers},
                     {"zero", p.zero},
                     {"schedule", p.dualpipe()                              ? "dualpipe"
                                  : p.schedule == workload::Schedule::GPipe ? "gpipe"
                                  : p.vp > 1                                ? "interleaved"
                                                                            : "1f1b"},
                     {"sets", c.sets},
                     {"memory_per_gpu_bytes", c.memory_per_gpu_bytes},
                     {"fast_step_time_s", c.fast.step_time_s},
                     {"fast_mfu", c.fast.mfu},
                     {"replayed", c.replayed}};
    if (c.replayed) {
      j["step_time_s"] = c.result.step_time_s;
      j["mfu"] = c.result.mfu;
      j["tokens_per_s"] = c.result.tokens_per_s;
      j["bottleneck"] = c.result.bottleneck;
      j["fast_error"] = (c.fast.step_time_s - c.result.step_time_s) / c.result.step_time_s;
    }
    plans.push_back(std::move(j));
  }
  return {{"evaluated", r.evaluated}, {"enumerated", r.enumerated}, {"fit", r.fit},
          {"replayed", r.replayed},   {"seconds", r.seconds},       {"fast_seconds", r.fast_seconds},
          {"plans", std::move(plans)}};
}

}  // namespace stacksim::analysis
