// compare and elasticity: verdict directions and sizes that follow from the physics.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <fstream>
#include <set>

#include "config/error.hpp"
#include "services/compare.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::analysis;

namespace {

std::string scenario() {
  // 16 nodes of DGX H100, pure data parallelism on a 1.3B model: large gradient all-reduces over
  // the NICs each step, compute-heavy layers.
  const std::string path = test_tmp("cmp.yaml");
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
  for (const auto& [k, v] : c.baseline.breakdown)
    if (k == "dp_comm") base_dp = v;
  for (const auto& [k, v] : c.variants[0].result.breakdown)
    if (k == "dp_comm") var_dp = v;
  EXPECT_GE(var_dp, base_dp);
}

TEST(Compare, ElasticityRanksGpuFlopsFirstForAComputeBoundJobAndIsDeterministic) {
  const Comparison a = compare(scenario(), {}, {}, true);
  ASSERT_EQ(a.elasticity.size(), 9u);
  EXPECT_EQ(a.elasticity.front().label, "gpu_flops");
  EXPECT_GT(a.elasticity.front().speedup, 1.3);  // most of the step is GEMM/attention
  EXPECT_LT(a.elasticity.front().speedup, 2.0);  // but not all of it
  for (size_t i = 1; i < a.elasticity.size(); ++i) EXPECT_GE(a.elasticity[i - 1].speedup, a.elasticity[i].speedup);
  const Comparison b = compare(scenario(), {}, {}, true);
  for (size_t i = 0; i < a.elasticity.size(); ++i) EXPECT_EQ(a.elasticity[i].speedup, b.elasticity[i].speedup);
}

TEST(Compare, JsonCarriesTheContractFieldsWithSetAsAnObject) {
  const nlohmann::json j =
      comparison_json(compare(scenario(), {}, {{"hardware.gpu=B200", "parallelism.micro_batch=2"}}, true));
  std::set<std::string> top;
  for (const auto& [k, v] : j.items()) top.insert(k);
  EXPECT_EQ(top, (std::set<std::string>{"baseline", "variants", "elasticity"}));
  for (const char* k : {"step_time_s", "tokens_per_s", "goodput_tokens_per_s", "breakdown", "bottleneck"})
    EXPECT_TRUE(j["baseline"].contains(k)) << k;
  ASSERT_EQ(j["variants"].size(), 1u);
  const auto& v = j["variants"][0];
  EXPECT_EQ(v["set"], (nlohmann::json{{"hardware.gpu", "B200"}, {"parallelism.micro_batch", 2}}));
  for (const char* k : {"speedup", "goodput_speedup"}) EXPECT_TRUE(v[k].is_number()) << k;
  EXPECT_TRUE(v["bottleneck"].is_string());
  EXPECT_TRUE(v["reason"].is_string());
  EXPECT_TRUE(v["breakdown"].is_object());
  EXPECT_FALSE(v.contains("cost_change_pct"));  // no prices in this scenario
  ASSERT_EQ(j["elasticity"].size(), 9u);
  for (const auto& e : j["elasticity"]) {
    std::set<std::string> keys;
    for (const auto& [k, x] : e.items()) keys.insert(k);
    EXPECT_EQ(keys, (std::set<std::string>{"resource", "speedup"}));
  }
}

TEST(Compare, ReasonNamesWhatGotFasterAndWhatBoundsTheStep) {
  // Story (a): the B200's GEMMs are ~2x faster, but the step waits for the data loader.
  const std::string story = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-dataloader-bound.yaml";
  const Comparison c = compare(story, {}, {{"hardware.gpu=B200"}}, false);
  const std::string& r = c.variants[0].reason;
  EXPECT_NE(r.find("GEMM compute got"), std::string::npos) << r;
  EXPECT_NE(r.find("x faster (gemm"), std::string::npos) << r;
  EXPECT_NE(r.find("of the step is now waiting for the data loader"), std::string::npos) << r;
  EXPECT_EQ(r, compare(story, {}, {{"hardware.gpu=B200"}}, false).variants[0].reason);  // deterministic
}

TEST(Compare, ElasticityCostsOneSimulationPerClassPlusTheBaselineAndIgnoresThreads) {
  auto run = [](int threads) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    return compare(scenario(), {}, {}, true);
  };
  const Comparison one = run(1), many = run(4);
  EXPECT_LE(one.simulations, one.elasticity.size() + 1);
  EXPECT_EQ(many.simulations, one.simulations);
  ASSERT_EQ(one.elasticity.size(), many.elasticity.size());
  EXPECT_EQ(one.baseline.step_time_s, many.baseline.step_time_s);
  for (size_t i = 0; i < one.elasticity.size(); ++i) {
    EXPECT_EQ(one.elasticity[i].label, many.elasticity[i].label);
    EXPECT_EQ(one.elasticity[i].speedup, many.elasticity[i].speedup);
    EXPECT_EQ(one.elasticity[i].result.breakdown, many.elasticity[i].result.breakdown);
  }
}

namespace {

std::string priced_scenario() {
  const std::string path = test_tmp("priced.yaml");
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 2}\n"
                         "model: {layers: 24, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 50304, seq_len: 2048}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 16, micro_batch: 4, global_batch: 128, zero: 1}\n"
                         "prices: {gpu_hour_usd: 2.5, node_hour_usd: 4, nic_hour_usd: 0.25}\n";
  return path;
}

}  // namespace

TEST(Compare, PricesGiveCostPerMillionTokensAndVariantsCanChangeThem) {
  const Scenario s = load_scenario(priced_scenario(), {});
  const auto& cl = s.training.cluster;
  const double usd_per_hour = 2.5 * cl.num_gpus() + 4 * cl.nodes + 0.25 * cl.num_nics();
  const Comparison c = compare(priced_scenario(), {}, {{"prices.gpu_hour_usd=5"}, {"hardware.gpu=B200"}}, true);
  EXPECT_DOUBLE_EQ(c.baseline.usd_per_hour, usd_per_hour);
  EXPECT_NEAR(c.baseline.usd_per_million_tokens, usd_per_hour / (c.baseline.tokens_per_s * 3600 / 1e6), 1e-12);
  // Doubling the GPU price alone: same speed, the cost grows by the GPUs' share of the bill.
  EXPECT_EQ(c.variants[0].speedup, 1.0);
  EXPECT_NEAR(cost_change_pct(c.baseline, c.variants[0].result), 100 * 2.5 * cl.num_gpus() / usd_per_hour, 1e-9);
  // Same prices, faster GPU: the cost falls by the speedup.
  EXPECT_NEAR(cost_change_pct(c.baseline, c.variants[1].result), 100 * (1 / c.variants[1].speedup - 1), 1e-9);
  const nlohmann::json j = comparison_json(c);
  EXPECT_TRUE(j["variants"][1]["cost_change_pct"].is_number());
  for (const auto& e : j["elasticity"])
    EXPECT_NEAR(e["usd_per_million_tokens"].get<double>() * e["speedup"].get<double>(),
                c.baseline.usd_per_million_tokens, 1e-12);
}

TEST(Compare, BadPricesAreInputErrors) {
  EXPECT_THROW(load_scenario(priced_scenario(), {"prices.gpu_hour_usd=-1"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(priced_scenario(), {"prices={gpu_hour_usd: 0}"}), stacksim::config::InputError);
  try {
    load_scenario(priced_scenario(), {"prices.gpu_hours_usd=3"});
    FAIL() << "expected an InputError";
  } catch (const stacksim::config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean --set prices.gpu_hour_usd=3?"), std::string::npos) << e.what();
  }
}

TEST(Compare, TheReasonSaysWhenThePacingStageMoves) {
  // Two pipeline stages; the heavier one paces the pipeline and its breakdown is reported. Moving
  // the extra layers from the first stage to the last moves the pacing stage from 0 to 1.
  const std::string path = test_tmp("cmp_stages.yaml");
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 1}\n"
                         "model: {layers: 8, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 50304, seq_len: 2048}\n"
                         "parallelism: {tp: 1, pp: 2, dp: 4, micro_batch: 1, global_batch: 32, stage_layers: [6, 2]}\n";
  const Comparison moved = compare(path, {}, {{"parallelism.stage_layers=[2, 6]"}}, false);
  EXPECT_NE(moved.variants[0].reason.find("pacing pipeline stage moved from 0 to 1"), std::string::npos)
      << moved.variants[0].reason;
  const Comparison same = compare(path, {}, {{"hardware.gpu=H200-SXM-141GB"}}, false);
  EXPECT_EQ(same.variants[0].reason.find("pacing pipeline stage"), std::string::npos) << same.variants[0].reason;
}
