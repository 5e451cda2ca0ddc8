// libFuzzer target: the validation case-file reader (stacksim-validation/1) and the training-case
// policy that turns a case into a scenario, then the scenario reader, without simulating. As in
// `stacksim validate`, a case that cannot be built is a row with its reason (any std::exception
// from one case); the file itself must fail with InputError only. Seeds: one file per case of
// validation/ (benchmarks/fuzz_run.py writes them); dictionary: fuzz/cases.dict.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "config/cases_file.hpp"
#include "config/error.hpp"
#include "services/scenario.hpp"
#include "validate/training_cases.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stacksim::config::Node cases(YAML::Node(), "", "");
  try {
    cases = stacksim::config::validation_cases_of(stacksim::config::Node::load_string(text, "<fuzz>"));
  } catch (const stacksim::config::InputError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error reading the case file: %s\n", e.what());
    std::abort();
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    try {
      const YAML::Node c = cases.at(i).yaml();
      if (!c.IsMap() || !c["kind"] || !c["kind"].IsScalar() || c["kind"].Scalar() != "training") continue;
      std::vector<std::string> defaults;
      const YAML::Node scenario = stacksim::analysis::training_case_scenario(c, defaults);
      stacksim::analysis::scenario_from_yaml(scenario, "<fuzz case>", STACKSIM_SOURCE_DIR "/validation");
    } catch (const std::exception&) {
      // The case is reported with its reason, as validate does.
    }
  }
  return 0;
}
