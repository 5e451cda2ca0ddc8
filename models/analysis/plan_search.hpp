// `stacksim plan`: enumerate the (tp, pp, vp or DualPipe, dp, micro-batch, recompute, ZeRO, ep) plans that use every
// GPU of the scenario's cluster, simulate them in parallel, drop the invalid and out-of-memory
// ones and rank the rest by step time.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "models/analysis/training.hpp"

namespace stacksim::analysis {

struct PlanCandidate {
  std::vector<std::string> sets;
  TrainingResult result;
};

std::vector<PlanCandidate> search_plans(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                                        size_t top, size_t* evaluated = nullptr);
void print_plans(const std::vector<PlanCandidate>& plans, size_t evaluated, std::ostream& out);

}  // namespace stacksim::analysis
