// Collective validation against the published measurements (shared/validation/cases.yaml): every
// collective case is predicted, and the mean absolute percentage error meets the project target
// (<= 15%). Prints the per-case table and the per-source summary.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "models/collectives/validate_collectives.hpp"

using namespace stacksim::coll;

TEST(CollectiveValidation, PublishedCasesWithinTarget) {
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no validation cases at " << path;
  const CollectiveValidation v = validate_collective_cases(path);
  ASSERT_FALSE(v.cases.empty());
  for (const auto& c : v.cases) {
    if (c.result.error.empty())
      std::printf("%-52s %-18s %9.2f %9.2f %+7.1f%%\n", c.id.c_str(), c.result.metric.c_str(), c.result.predicted,
                  c.result.measured, c.error_pct);
    else
      std::printf("%-52s error: %s\n", c.id.c_str(), c.result.error.c_str());
  }
  for (const auto& [source, s] : v.by_source)
    std::printf("source %-20s n=%zu MAPE %.1f%% max %.1f%%\n", source.c_str(), s.n, s.mape_pct, s.max_abs_error_pct);
  std::printf("overall n=%zu MAPE %.1f%% max %.1f%%, %zu not predicted\n", v.overall.n, v.overall.mape_pct,
              v.overall.max_abs_error_pct, v.errors);
  EXPECT_EQ(v.errors, 0u);
  EXPECT_LE(v.overall.mape_pct, 15.0);
}
