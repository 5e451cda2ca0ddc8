// Every bundled scenario (scenarios/*.yaml) runs as README says it does: `stacksim run` on it ends
// in a result whose breakdown accounts for the whole step (training) or in a size table
// (collective benchmarks). A scenario that a model change breaks fails here, not in a user's hands.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/analysis/commands.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

TEST(BundledScenarios, EveryOneRuns) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(STACKSIM_SOURCE_DIR "/scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  ASSERT_GE(paths.size(), 10u);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const std::string json = test_tmp("bundled.json");
    std::ostringstream out, err;
    ASSERT_EQ(analysis::run_command("run", {path, "--json", json}, out, err), 0) << err.str();
    const nlohmann::json r = nlohmann::json::parse(std::ifstream(json));
    if (!r.contains("step_time_s")) continue;  // a collective benchmark: its table was printed
    double sum = 0;
    for (const auto& [category, seconds] : r["breakdown"].items()) sum += seconds.get<double>();
    EXPECT_GT(r["step_time_s"].get<double>(), 0.0);
    EXPECT_NEAR(sum, r["step_time_s"].get<double>(), 1e-6 * r["step_time_s"].get<double>());
  }
}
