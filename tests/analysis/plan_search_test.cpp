// Plan search: every candidate fits in memory, they come fastest first, and the best beats a
// naive plan (pure data parallelism with full recomputation) of the same job.
#include <gtest/gtest.h>

#include <fstream>

#include "models/analysis/plan_search.hpp"
#include "models/analysis/scenario.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::analysis;

TEST(PlanSearch, FastestFittingPlansFirstAndBetterThanNaive) {
  const std::string path = test_tmp("plan.yaml");
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 2}\n"
                         "model: {layers: 8, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, vocab: 32000,"
                         " seq_len: 4096, mlp: swiglu}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 16, micro_batch: 1, global_batch: 64, recompute: full}\n";
  size_t evaluated = 0;
  const auto plans = search_plans(path, {}, 3, &evaluated);
  ASSERT_FALSE(plans.empty());
  EXPECT_GT(evaluated, plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_FALSE(plans[i].result.oom);
    if (i) { EXPECT_LE(plans[i - 1].result.step_time_s, plans[i].result.step_time_s); }
  }
  const Scenario naive = load_scenario(path, {});
  EXPECT_LE(plans[0].result.step_time_s, simulate_training(naive.training, RunOptions{}).step_time_s);
}
