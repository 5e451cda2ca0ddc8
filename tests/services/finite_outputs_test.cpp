// No command prints or writes a number that is not finite: the JSON writer refuses one, and every
// bundled scenario's `compare --json` holds finite numbers only (checked before it is written,
// where NaN and inf are still themselves: the library would write them as null).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/error.hpp"
#include "services/compare.hpp"
#include "services/output.hpp"
#include "services/scenario.hpp"
#include "services/training.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

namespace {

// The paths of the numbers in `j` that are not finite.
void non_finite(const nlohmann::json& j, const std::string& path, std::vector<std::string>& found) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) found.push_back(path);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) non_finite(v, path + "." + k, found);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) non_finite(j[i], path + "[" + std::to_string(i) + "]", found);
}

std::vector<std::string> bundled() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(STACKSIM_SOURCE_DIR "/scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

// `run --json` of every bundled scenario: BundledScenarios.EveryOneRuns writes it through
// write_json_atomically, which refuses a non-finite number (tested here), so that test fails on one.
TEST(FiniteOutputs, TheJsonWriterRefusesNonFiniteNumbersAndWritesNothing) {
  const std::string path = test_tmp("nan.json");
  std::remove(path.c_str());
  nlohmann::json j{{"step_time_s", 1.0}, {"breakdown", {{"gemm", std::nan("")}}}};
  try {
    analysis::write_json_atomically(path, j);
    FAIL() << "written";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "breakdown.gemm");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  j["breakdown"]["gemm"] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(analysis::write_json_atomically(path, j), config::InputError);
}

// `compare --json` of every bundled training scenario: a GPU swap, and for the scenarios of up to
// 16 GPUs (the stories) the elasticity study too, whose ratios of step times are where a 0/0
// would show (the large scenarios' elasticity costs minutes of CPU: README's speed table).
TEST(FiniteOutputs, EveryBundledTrainingScenarioComparesToFiniteNumbers) {
  for (const std::string& path : bundled()) {
    SCOPED_TRACE(path);
    const analysis::Scenario s = analysis::load_scenario(path, {});
    if (s.kind != analysis::WorkloadKind::Training) continue;
    const bool small = s.training.cluster.num_gpus() <= 16;
    const analysis::Comparison c = analysis::compare(path, {}, {{"hardware.gpu=H200-SXM-141GB"}}, small);
    std::vector<std::string> found;
    non_finite(analysis::comparison_json(c), "compare", found);
    EXPECT_TRUE(found.empty()) << found.front();
  }
}
