// The plan space `stacksim plan` searches: every (tp, pp, vp or DualPipe, cp, dp, ep, micro-batch,
// recompute, ZeRO stage) plan that uses every GPU of the scenario's cluster and that the plan's
// own checks accept (check_plan), built on the scenario's other parallelism keys (precision,
// overlaps, ...). Each plan comes with the --set overrides that reproduce it.
#pragma once
#include <string>
#include <vector>

#include "services/scenario.hpp"

namespace stacksim::analysis {

struct PlanPoint {
  workload::ParallelPlan plan;
  std::vector<std::string> sets;  // parallelism.KEY=VALUE, applied over the scenario
};

// Recompute: none, selective (the scenario's modules), full, and what `auto` picks when it is a
// partial full recomputation (the first layers of each chunk) that fits `gpu_memory_bytes`.
// `enumerated` (optional): combinations tried, valid or not.
std::vector<PlanPoint> enumerate_plans(const Scenario& s, double gpu_memory_bytes, size_t* enumerated = nullptr);

// A plan as the search prints it: "tp=4 pp=2 vp=2 dp=8 micro_batch=1 recompute=none zero=1".
std::string plan_label(const std::vector<std::string>& sets);

}  // namespace stacksim::analysis
