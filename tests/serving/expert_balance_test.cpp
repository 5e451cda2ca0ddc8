// The busiest expert-parallel rank's load (models/serving/expert_balance.hpp) against closed forms
// and the statistics it was set from.
#include "models/serving/expert_balance.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace stacksim::serving {
namespace {

TEST(ExpertBalance, ExpectedMaxOfNormalsMatchesClosedForms) {
  EXPECT_DOUBLE_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1 / std::sqrt(M_PI), 1e-6);    // 0.5642
  EXPECT_NEAR(expected_max_standard_normal(3), 1.5 / std::sqrt(M_PI), 1e-6);  // 0.8463
  EXPECT_NEAR(expected_max_standard_normal(8), 1.4236, 1e-3);                 // tables of normal order statistics
  EXPECT_NEAR(expected_max_standard_normal(32), 2.0697, 1e-3);
}

TEST(ExpertBalance, OneRankHasNoSpread) {
  EXPECT_DOUBLE_EQ(busiest_expert_rank_factor(256, 1, 1e6, false), 1.0);
  EXPECT_DOUBLE_EQ(busiest_expert_rank_factor(256, 8, 0, false), 1.0);
}

TEST(ExpertBalance, ReproducesTheDeepSeekR1Ep32Statistics) {
  // TensorRT-LLM tech blog 4: (max - mean) / mean 1.564 at EP32 without EPLB (8 experts per
  // rank, a large batch), 0.115 at EP36 with EPLB.
  EXPECT_NEAR(busiest_expert_rank_factor(256, 32, 1e7, false), 2.564, 0.01);
  EXPECT_NEAR(busiest_expert_rank_factor(288, 36, 1e7, true), 1.115, 0.005);
}

TEST(ExpertBalance, FewerExpertsPerRankAndFewerTokensSpreadMore) {
  const double ep8 = busiest_expert_rank_factor(256, 8, 1e6, false);
  const double ep32 = busiest_expert_rank_factor(256, 32, 1e6, false);
  EXPECT_GT(ep32, ep8);
  EXPECT_GT(ep8, 1.0);
  // Binomial sampling alone (a balanced placement): CV^2 = (ep - 1) / copies.
  const double few = busiest_expert_rank_factor(256, 2, 32, true);
  EXPECT_NEAR(few, 1 + (1 / std::sqrt(M_PI)) * std::sqrt(0.054 * 0.054 + 1.0 / 32), 1e-6);
  EXPECT_GT(few, busiest_expert_rank_factor(256, 2, 3200, true));
  // Never more than all the copies on one rank.
  EXPECT_LE(busiest_expert_rank_factor(256, 64, 2, false), 64.0);
}

}  // namespace
}  // namespace stacksim::serving
