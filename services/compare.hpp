// `stacksim compare`: a baseline scenario against changed variants (--set), with the speedup, the
// breakdowns side by side, the shift of the bottleneck and a plain-words reason; and elasticity:
// the step speedup if only one resource class were 2x faster (GPU FLOP/s, HBM bandwidth, NVLink,
// NIC/fabric, PCIe, CPU loader, storage), which ranks the upgrades: one simulation per class plus
// the baseline. With a prices: section each result also carries its cost per million tokens. Variants run in parallel
// (oneTBB) into a pre-sized vector: the output does not depend on the thread count.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "services/training.hpp"

namespace stacksim::analysis {

struct VariantOutcome {
  std::vector<std::string> sets;  // KEY=VALUE
  std::string label;
  TrainingResult result;
  double speedup = 0;  // baseline step time / variant step time
  // Its 80 % interval: the spread of the ratio of two rows of one source (shared factors cancel)
  // when both run the same fitted stack, else the two bands combined; {0, 0} without a fit.
  std::pair<double, double> speedup_interval{0, 0};
  std::string reason;
};

struct Comparison {
  TrainingResult baseline;
  std::vector<VariantOutcome> variants;
  std::vector<VariantOutcome> elasticity;  // label = resource class
  size_t simulations = 0;                  // simulate_training calls made
};

Comparison compare(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity);

// The same for a scenario held elsewhere (Python's in-memory Scenario): `load(sets)` returns the
// scenario with those overrides applied; `origin` names it in errors.
using ScenarioLoader = std::function<Scenario(const std::vector<std::string>& sets)>;
Comparison compare(const ScenarioLoader& load, const std::string& origin, const std::vector<std::string>& base_sets,
                   const std::vector<std::vector<std::string>>& variants, bool elasticity);

// Change of the cost per million tokens, in percent (negative: cheaper); both results priced.
double cost_change_pct(const TrainingResult& base, const TrainingResult& var);
std::pair<double, double> speedup_interval(const TrainingResult& base, const TrainingResult& var, double speedup);

nlohmann::json comparison_json(const Comparison& c);
void print_comparison(const Comparison& c, std::ostream& out);

}  // namespace stacksim::analysis
