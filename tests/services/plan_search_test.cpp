// Plan search: every candidate fits in memory, they come fastest first, and the best beats a
// naive plan (pure data parallelism with full recomputation) of the same job.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "services/plan_search.hpp"
#include "services/scenario.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::analysis;

namespace {
// A Llama-style job (8 layers unless said) on two DGX H100 nodes, naively planned (pure DP, full
// recomputation); `model_extra` and `plan_extra` append keys to the model and plan maps.
std::string write_job(const std::string& name, int layers = 8, const std::string& model_extra = "",
                      const std::string& plan_extra = "") {
  const std::string path = test_tmp(name);
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 2}\n"
                         "model: {layers: "
                      << layers
                      << ", hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336,"
                         " vocab: 32000, seq_len: 4096, mlp: swiglu"
                      << model_extra
                      << "}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 16, micro_batch: 1, global_batch: 64, recompute: full"
                      << plan_extra << "}\n";
  return path;
}

bool has_set(const PlanCandidate& c, const std::string& set) {
  return std::find(c.sets.begin(), c.sets.end(), set) != c.sets.end();
}

// The search with the best `k` replayed; every fitting plan comes back.
std::vector<PlanCandidate> search(const std::string& path, size_t k, size_t* evaluated = nullptr,
                                  size_t* fit = nullptr) {
  PlanSearchOptions o;
  o.replay_top = k;
  PlanSearchResult r = search_plans(path, {}, o);
  if (evaluated) *evaluated = r.evaluated;
  if (fit) *fit = r.fit;
  return std::move(r.plans);
}
}  // namespace

TEST(PlanSearch, FastestFittingPlansFirstAndBetterThanNaive) {
  const std::string path = write_job("plan.yaml");
  size_t evaluated = 0;
  const auto plans = search(path, 3, &evaluated);
  ASSERT_GE(plans.size(), 3u);
  EXPECT_GE(evaluated, plans.size());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(plans[i].replayed);
    EXPECT_FALSE(plans[i].result.oom);
    if (i) {
      EXPECT_LE(plans[i - 1].result.step_time_s, plans[i].result.step_time_s);
    }
  }
  for (size_t i = 4; i < plans.size(); ++i) {  // the rest as the fast tier ranks them
    EXPECT_FALSE(plans[i].replayed);
    EXPECT_LE(plans[i - 1].fast.step_time_s, plans[i].fast.step_time_s);
  }
  const Scenario naive = load_scenario(path, {});
  EXPECT_LE(plans[0].result.step_time_s, simulate_training(naive.training, RunOptions{}).step_time_s);
}

TEST(PlanSearch, TriesInterleavedPipelinesAndFsdp) {
  const std::string path = write_job("plan_kinds.yaml");
  const auto plans = search(path, 0);
  bool interleaved = false, fsdp = false, context = false, zero2 = false;
  std::set<std::string> recompute;
  for (const PlanCandidate& c : plans) {
    interleaved |= has_set(c, "parallelism.vp=2") || has_set(c, "parallelism.vp=4");
    fsdp |= has_set(c, "parallelism.zero=3");
    zero2 |= has_set(c, "parallelism.zero=2");
    context |= has_set(c, "parallelism.cp=2");
    recompute.insert(stacksim::workload::recompute_name(c.plan.recompute));
    EXPECT_GT(c.fast.step_time_s, 0.0);
  }
  EXPECT_TRUE(interleaved);
  EXPECT_TRUE(fsdp);
  EXPECT_TRUE(zero2);
  EXPECT_TRUE(context);
  EXPECT_EQ(recompute, (std::set<std::string>{"none", "selective", "full"}));
}

TEST(PlanSearch, TriesDualPipeOnEvenPipelines) {
  const std::string path = write_job("plan_dualpipe.yaml");
  bool dualpipe = false;
  for (const PlanCandidate& c : search(path, 0))
    if (has_set(c, "parallelism.schedule=dualpipe")) {
      dualpipe = true;
      EXPECT_TRUE(has_set(c, "parallelism.vp=1"));
      EXPECT_FALSE(has_set(c, "parallelism.pp=1") || has_set(c, "parallelism.pp=3"));
      EXPECT_GT(c.fast.step_time_s, 0.0);
    }
  EXPECT_TRUE(dualpipe);
}

TEST(PlanSearch, MoeModelsTryExpertParallelismIncludingFolding) {
  // Mixtral-shaped (8 experts, top-2) on two DGX H100: the search tries ep out of dp and, with
  // tp > 1, ep beyond dp with whole experts (etp 1); every dense candidate keeps ep 1.
  const std::string path = write_job("plan_moe.yaml", 8, ", moe: {experts: 8, top_k: 2}");
  const auto plans = search(path, 0);
  bool expert_parallel = false, folded = false;
  for (const PlanCandidate& c : plans) {
    expert_parallel |= has_set(c, "parallelism.ep=8");
    folded |= has_set(c, "parallelism.tp=8") && has_set(c, "parallelism.dp=1") && has_set(c, "parallelism.ep=8") &&
              has_set(c, "parallelism.etp=1");
  }
  EXPECT_TRUE(expert_parallel);
  EXPECT_TRUE(folded);
}

TEST(PlanSearch, LayersThatDoNotDivideGetAnUnevenLayoutThatReplacesTheScenarios) {
  // 10 layers on 16 GPUs: pp 4 takes 2 on the first and last stages and 3 on the two middle ones;
  // pp 8 (and pp 4 x vp 2) counts every stage. The scenario's own first/last split (for no plan
  // the search tries) is replaced, so pipeline-free candidates exist too.
  const std::string path = write_job("plan_uneven.yaml", 10, "", ", first_stage_layers: 3, last_stage_layers: 3");
  const auto plans = search(path, 0);
  bool split = false, counted = false, flat = false;
  for (const PlanCandidate& c : plans) {
    split |= has_set(c, "parallelism.pp=4") && has_set(c, "parallelism.vp=1") &&
             has_set(c, "parallelism.first_stage_layers=2") && has_set(c, "parallelism.last_stage_layers=2");
    counted |= has_set(c, "parallelism.pp=8") && has_set(c, "parallelism.stage_layers=[1,2,2,1,1,1,1,1]");
    flat |= has_set(c, "parallelism.pp=1");
  }
  EXPECT_TRUE(split);
  EXPECT_TRUE(counted);
  EXPECT_TRUE(flat);
}

TEST(PlanSearch, RecomputeAutoKeepsTheScenariosRecomputeModules) {
  // recompute: auto parses as selective, so the plan's recompute_modules are what auto's selective
  // step tries (they were refused as "selective only" before), and the search can run on it.
  const std::string path = write_job("plan_modules.yaml", 8, "", ", recompute_modules: [layernorm]");
  const Scenario s = load_scenario(path, {"parallelism.recompute=auto"});
  EXPECT_TRUE(s.training.recompute_auto);
  EXPECT_EQ(s.training.plan.recompute_modules, unsigned(stacksim::workload::kRecomputeLayernorm));
  EXPECT_FALSE(search(path, 1).empty());
  // A selective run names its modules where they are not the default core attention.
  const Scenario selective = load_scenario(path, {"parallelism.recompute=selective"});
  EXPECT_EQ(simulate_training(selective.training, RunOptions::step_only()).recompute, "selective (layernorm)");
}

TEST(PlanSearch, ParsingAScenarioLeavesItsRecomputeAutoInTheCallersTree) {
  // YAML nodes share their data: a tree parsed once must still say auto when it is parsed again
  // (the case policy parses its trial plans for the memory check, then runs the one that fits).
  YAML::Node root = YAML::LoadFile(write_job("plan_auto.yaml"));
  root["parallelism"]["recompute"] = "auto";
  EXPECT_TRUE(scenario_from_yaml(root, "first").training.recompute_auto);
  EXPECT_EQ(root["parallelism"]["recompute"].as<std::string>(), "auto");
  EXPECT_TRUE(scenario_from_yaml(root, "second").training.recompute_auto);
}

TEST(PlanSearch, PlansThatDoNotFitAreNotSimulated) {
  // A 64-layer model of this width on 16 GPUs: the unsharded, unpipelined plans do not fit; they
  // are dropped on the memory check alone, and what remains is the same ranking.
  const std::string path = write_job("plan_big.yaml", 64);
  size_t evaluated = 0, fit = 0;
  const auto plans = search(path, 5, &evaluated, &fit);
  ASSERT_FALSE(plans.empty());
  EXPECT_LT(fit, evaluated);
  EXPECT_EQ(fit, plans.size());
  const Scenario naive = load_scenario(path, {});
  EXPECT_TRUE(simulate_training(naive.training, RunOptions{}).oom);  // pure DP: no candidate
  for (const auto& p : plans) {
    EXPECT_LE(p.memory_per_gpu_bytes, 85.52e9);  // the H100's 80 GiB
    EXPECT_FALSE(has_set(p, "parallelism.zero=0") && has_set(p, "parallelism.pp=1") && has_set(p, "parallelism.tp=1"));
  }
}

// A scenario that offloads the optimizer and the parameters: its plans keep the optimizer on the
// host (ZeRO 1 to 3) and the parameters there only under ZeRO-3, and each plan's sets load as a
// valid scenario (before, ZeRO-2 plans kept offload_params, which no scenario can state).
TEST(PlanSearch, OffloadsStayWithinTheZeroStagesThatAllowThem) {
  const std::string path =
      write_job("plan_offload.yaml", 8, "", ", zero: 3, offload_optimizer: true, offload_params: true");
  const Scenario s = load_scenario(path, {});
  const std::vector<PlanPoint> points = enumerate_plans(s, 80e9);
  ASSERT_FALSE(points.empty());
  std::set<int> zeros;
  for (const PlanPoint& p : points) {
    zeros.insert(p.plan.zero);
    EXPECT_TRUE(p.plan.offload_optimizer);
    EXPECT_EQ(p.plan.offload_params, p.plan.zero == 3);
    const Scenario again = load_scenario(path, p.sets);
    EXPECT_EQ(again.training.plan.offload_params, p.plan.offload_params) << plan_label(p.sets);
  }
  EXPECT_EQ(zeros, (std::set<int>{1, 2, 3}));
}
