// `stacksim validate`: predicts every case of a stacksim-validation/1 file
// (../shared/validation/README.md) and compares with the published measurement.
// Training cases go through the full replay; gemm/memory cases through the kernel model;
// collective cases through the collective model on the case's topology. A case that cannot be
// built is listed with its reason and counted apart, never dropped.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace stacksim::analysis {

struct CaseOutcome {
  std::string id, kind, source, metric;
  double predicted = 0, measured = 0, error_pct = 0;  // error = (predicted - measured) / measured
  std::string error;                                  // non-empty: not buildable, and why
  std::vector<std::string> defaults;                  // fields filled by the global null policy
  std::string scenario_yaml;                          // training: the scenario built and run
  bool ok() const { return error.empty(); }
};

struct ValidationFilter {
  std::vector<std::string> kinds;    // empty = all
  std::vector<std::string> sources;  // empty = all
  std::vector<std::string> ids;      // empty = all (substring match)
};

std::vector<CaseOutcome> validate_file(const std::string& cases_path, const ValidationFilter& filter);

nlohmann::json validation_json(const std::vector<CaseOutcome>& outcomes);
void print_validation(const std::vector<CaseOutcome>& outcomes, std::ostream& out);

}  // namespace stacksim::analysis
