// The serving parts of the commands: `catalog engines|datasets`, `run --trace` on a serving
// scenario (engine steps and request lifetimes as Chrome-trace JSON for ui.perfetto.dev), and
// `compare` / `compare --elasticity` on a serving scenario (serving_compare.cpp).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "services/serving_run.hpp"

namespace stacksim::analysis {

int print_serving_catalog(const std::string& what, std::ostream& out);
void write_serving_trace(const std::string& path, const Scenario& s, const ServingRun& r);

struct ServingVariant {
  std::vector<std::string> sets;  // KEY=VALUE
  std::string label;              // the sets, or the resource class (elasticity)
  ServingRun run;
  double speedup = 0;  // of the primary figure (serving_primary_figure) over the baseline's
  std::string reason;
};

struct ServingComparison {
  std::string figure;  // what speedup compares ("max rate under the SLO", "output tokens/s")
  ServingRun baseline;
  std::vector<ServingVariant> variants, elasticity;
};

// The figure a serving comparison ranks by: with an SLO the max sustainable request rate under it
// (the run's rate when no rate meets it: 0), else output tokens/s.
double serving_primary_figure(const ServingRun& r);

ServingComparison compare_serving(const std::string& scenario_path,
                                  const std::vector<std::vector<std::string>>& variants, bool elasticity);
nlohmann::json serving_comparison_json(const ServingComparison& c);
void print_serving_comparison(const ServingComparison& c, std::ostream& out);

}  // namespace stacksim::analysis
