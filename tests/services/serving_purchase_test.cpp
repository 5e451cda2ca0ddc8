// Serving purchase search: each deployment's replicas, GPUs and cost follow from one replica's
// highest rate under the SLO (the same rate search `run` does), the cheapest comes first, weights
// that do not fit are listed with the reason, and bad input names the key.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "config/error.hpp"
#include "services/scenario.hpp"
#include "services/serving_purchase.hpp"
#include "services/serving_run.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

namespace {

const char* kScenario = R"(
name: p
cluster: {node: dgx-h100, nodes: 1}
model: {preset: Llama 3 8B}
serving: {engine: vllm, tp: 1, weights_dtype: bf16}
workload: {mode: poisson, rate_per_s: 2, requests: 200, seed: 0, input: 512, output: 64}
slo: {ttft_ms: {p99: 1000}, tpot_ms: {p99: 60}}
)";

const char* kPurchase = R"(
purchase:
  rate_per_s: 30
  tp: [1, 2]
  options:
    - {name: H100, node: dgx-h100, prices: {gpu_hour_usd: 4}}
    - {name: H200, node: dgx-h200, prices: {gpu_hour_usd: 5}}
)";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = test_tmp(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(ServingPurchase, ReplicasAndCostFollowFromOneReplicasRateUnderTheSlo) {
  const std::string path = write("s.yaml", std::string(kScenario) + kPurchase);
  const analysis::ServingPurchaseResult r = analysis::search_serving_purchase(path, {}, "", false);
  ASSERT_EQ(r.options.size(), 4u);
  ASSERT_TRUE(r.found);
  for (const auto& o : r.options) {
    ASSERT_TRUE(o.feasible) << o.label << ": " << o.why;
    EXPECT_EQ(o.replicas, static_cast<int>(std::ceil(30.0 / o.rate_per_replica - 1e-9)));
    EXPECT_EQ(o.gpus, o.replicas * o.tp);
    EXPECT_DOUBLE_EQ(o.usd_per_hour, o.gpus * (o.option_name == "H100" ? 4.0 : 5.0));
    EXPECT_LE(o.ttft_p99_ms, 1000.0);
    EXPECT_LE(o.tpot_p99_ms, 60.0);
    EXPECT_GE(o.usd_per_hour, r.options.front().usd_per_hour);
  }
  // The rate per replica is the one `run` finds for that deployment.
  const auto& w = r.options.front();
  const analysis::Scenario s =
      analysis::load_scenario(write("one.yaml", kScenario),
                              {"serving.tp=" + std::to_string(w.tp),
                               std::string("cluster.node=") + (w.option_name == "H100" ? "dgx-h100" : "dgx-h200")});
  const analysis::ServingRun run = analysis::run_serving(s.serving);
  ASSERT_TRUE(run.searched);
  EXPECT_DOUBLE_EQ(run.rate.max_rate_per_s, w.rate_per_replica);
}

TEST(ServingPurchase, AHigherTargetNeverCostsLess) {
  const std::string path = write("s.yaml", std::string(kScenario) + kPurchase);
  const auto low = analysis::search_serving_purchase(path, {}, "", false);
  const auto high = analysis::search_serving_purchase(path, {"purchase.rate_per_s=90"}, "", false);
  ASSERT_TRUE(low.found && high.found);
  EXPECT_GT(high.options.front().usd_per_hour, low.options.front().usd_per_hour);
}

TEST(ServingPurchase, WeightsThatDoNotFitAreListedWithTheReason) {
  const std::string path = write("s.yaml", std::string(kScenario) + kPurchase);
  const auto r = analysis::search_serving_purchase(path, {"model.preset=Llama 3 70B"}, "", false);
  size_t infeasible = 0;
  for (const auto& o : r.options)
    if (!o.feasible) {
      ++infeasible;
      EXPECT_NE(o.why.find("GB"), std::string::npos) << o.why;  // the memory numbers
    }
  EXPECT_GE(infeasible, 1u);  // 140 GB of BF16 weights do not fit one H100
  EXPECT_FALSE(r.options.back().feasible);
}

TEST(ServingPurchase, BadInputNamesTheKey) {
  auto key_of = [](const std::string& path, const std::vector<std::string>& sets) {
    try {
      analysis::search_serving_purchase(path, sets, "", false);
    } catch (const config::InputError& e) {
      return e.key();
    }
    return std::string("(no error)");
  };
  const std::string ok = write("s.yaml", std::string(kScenario) + kPurchase);
  EXPECT_EQ(key_of(ok, {"purchase.rate_per_s=-1"}), "purchase.rate_per_s");
  EXPECT_EQ(key_of(ok, {"purchase.options.0.node=dgx-h1000"}), "purchase.options.0.node");
  const std::string no_slo =
      write("n.yaml", std::string(kScenario).substr(0, std::string(kScenario).find("slo:")) + kPurchase);
  EXPECT_EQ(key_of(no_slo, {}), "slo");
}
