// `stacksim plan`: a two-stage search over the plan space (plan_space.hpp). Plans that do not fit
// in memory are dropped first (the run's own memory check, no simulation); the fast tier
// (fast_training.hpp) ranks all the others; the replay confirms the best k, which are then
// ranked by their replayed step time, the fast tier's error on each reported. Deterministic with
// any number of threads (results are placed by index; ties keep enumeration order).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "services/fast_training.hpp"
#include "services/plan_space.hpp"
#include "services/training.hpp"

namespace stacksim::analysis {

struct PlanCandidate {
  std::vector<std::string> sets;  // the plan as --set overrides on the scenario
  workload::ParallelPlan plan;
  double memory_per_gpu_bytes = 0;
  FastTrainingResult fast;
  bool replayed = false;
  TrainingResult result;  // the replay's, when replayed
};

struct PlanSearchOptions {
  size_t replay_top = 10;  // k: plans the replay confirms, best of the fast ranking first
  bool progress = false;   // a progress bar on stderr
  // Also replay about this many plans spread evenly over the fast ranking (every ceil(fit/n)-th),
  // to measure how well the fast tier ranks (benchmarks/plan_rank_report.py); 0 = none.
  size_t replay_sample = 0;
};

struct PlanSearchResult {
  size_t enumerated = 0;  // combinations tried, valid or not
  size_t evaluated = 0;   // valid plans
  size_t fit = 0;         // of them, those that fit in memory (ranked by the fast tier)
  size_t replayed = 0;
  double seconds = 0;
  double fast_seconds = 0;  // the memory check and the fast tier alone
  // Every fitting plan: the replayed ones first, by replayed step time, then the rest by the
  // fast tier's.
  std::vector<PlanCandidate> plans;
};

PlanSearchResult search_plans(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                              const PlanSearchOptions& options);
PlanSearchResult search_plans(const Scenario& scenario, const PlanSearchOptions& options);
// Ranks an already enumerated space with a fast tier (purchase search reuses one per cluster).
PlanSearchResult search_plans(FastTier& tier, std::vector<PlanPoint> points, size_t enumerated,
                              const PlanSearchOptions& options);

// A scenario for plan search: its plan parsed (every searched plan keeps its other keys) but not
// checked against the cluster, which the search's own plans are.
Scenario load_for_plan_search(YAML::Node root, const std::string& path, const std::string& base_dir);

void print_plans(const PlanSearchResult& r, size_t top, std::ostream& out);
nlohmann::json plans_json(const PlanSearchResult& r);

// Spearman's rank correlation of two equally long series (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace stacksim::analysis
