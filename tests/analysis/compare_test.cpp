// compare and elasticity: verdict directions and sizes that follow from the physics.
#include <gtest/gtest.h>

#include <fstream>

#include "models/analysis/compare.hpp"

using namespace stacksim::analysis;

namespace {

std::string scenario() {
  // 16 nodes of DGX H100, pure data parallelism on a 1.3B model: large gradient all-reduces over
  // the NICs each step, compute-heavy layers.
  const std::string path = testing::TempDir() + "/cmp.yaml";
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 4}\n"
                         "model: {layers: 24, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 50304, seq_len: 2048}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 32, micro_batch: 4, global_batch: 128, zero: 0}\n";
  return path;
}

}  // namespace

TEST(Compare, SameComputeGpuBarelyHelpsAComputeBoundJob) {
  // H200 has H100's tensor peak; only HBM (memory-bound kernels) is faster: a small gain, < 15 %.
  const Comparison c = compare(scenario(), {}, {{"hardware.gpu=H200-SXM-141GB"}}, false);
  ASSERT_EQ(c.variants.size(), 1u);
  EXPECT_GE(c.variants[0].speedup, 1.0);
  EXPECT_LT(c.variants[0].speedup, 1.15);
  EXPECT_NE(c.variants[0].reason.find("Bottleneck unchanged: GEMM compute"), std::string::npos) << c.variants[0].reason;
}

TEST(Compare, FewerNicsSlowTheGradientReduction) {
  // Half the NICs halve the per-node network bandwidth of the data-parallel all-reduce: exposed DP
  // communication grows, the step cannot get faster.
  const Comparison c = compare(scenario(), {}, {{"cluster.nics_per_node=2"}}, false);
  EXPECT_LE(c.variants[0].speedup, 1.0);
  double base_dp = 0, var_dp = 0;
  for (const auto& [k, v] : c.baseline.breakdown) if (k == "dp_comm") base_dp = v;
  for (const auto& [k, v] : c.variants[0].result.breakdown) if (k == "dp_comm") var_dp = v;
  EXPECT_GE(var_dp, base_dp);
}

TEST(Compare, ElasticityRanksGpuFlopsFirstForAComputeBoundJobAndIsDeterministic) {
  const Comparison a = compare(scenario(), {}, {}, true);
  ASSERT_EQ(a.elasticity.size(), 7u);
  EXPECT_EQ(a.elasticity.front().label, "gpu_flops");
  EXPECT_GT(a.elasticity.front().speedup, 1.3);   // most of the step is GEMM/attention
  EXPECT_LT(a.elasticity.front().speedup, 2.0);   // but not all of it
  for (size_t i = 1; i < a.elasticity.size(); ++i) EXPECT_GE(a.elasticity[i - 1].speedup, a.elasticity[i].speedup);
  const Comparison b = compare(scenario(), {}, {}, true);
  for (size_t i = 0; i < a.elasticity.size(); ++i) EXPECT_EQ(a.elasticity[i].speedup, b.elasticity[i].speedup);
}
