// `stacksim plan`: enumerate the (tp, pp, vp or DualPipe, dp, micro-batch, recompute, ZeRO, ep) plans that use every
// GPU of the scenario's cluster, drop the invalid ones and those that do not fit in memory (the
// run's own memory check, no simulation), simulate the rest in parallel and rank them by step
// time. `evaluated`: the plans enumerated; `simulated`: those simulated.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "services/training.hpp"

namespace stacksim::analysis {

struct PlanCandidate {
  std::vector<std::string> sets;
  TrainingResult result;
};

std::vector<PlanCandidate> search_plans(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                                        size_t top, size_t* evaluated = nullptr, size_t* simulated = nullptr);
void print_plans(const std::vector<PlanCandidate>& plans, size_t evaluated, size_t simulated, std::ostream& out);

}  // namespace stacksim::analysis
