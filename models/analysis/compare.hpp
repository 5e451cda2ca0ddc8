// `stacksim compare`: a baseline scenario against changed variants (--set), with the speedup, the
// breakdowns side by side, the shift of the bottleneck and a plain-words reason; and elasticity:
// the step speedup if only one resource class were 2x faster (GPU FLOP/s, HBM bandwidth, NVLink,
// NIC/fabric, PCIe), which ranks the upgrades. Variants run in parallel (oneTBB) into a
// pre-sized vector: the output does not depend on the thread count.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "models/analysis/training.hpp"

namespace stacksim::analysis {

struct VariantOutcome {
  std::vector<std::string> sets;  // KEY=VALUE
  std::string label;
  TrainingResult result;
  double speedup = 0;             // baseline step time / variant step time
  std::string reason;
};

struct Comparison {
  TrainingResult baseline;
  std::vector<VariantOutcome> variants;
  std::vector<VariantOutcome> elasticity;  // label = resource class
};

Comparison compare(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity);

nlohmann::json comparison_json(const Comparison& c);
void print_comparison(const Comparison& c, std::ostream& out);

}  // namespace stacksim::analysis
