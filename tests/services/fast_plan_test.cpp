// The two-stage plan search: the fast tier ranks a small plan space as the replay does
// (Spearman's rank correlation over every fitting plan, the replay's best among the fast top 5,
// the fast tier's step within 5 % of the replay's on its top 10), the same answer with any
// number of threads, and the purchase search's answer and reasons.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "config/error.hpp"
#include "services/fast_training.hpp"
#include "services/plan_search.hpp"
#include "services/purchase.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::analysis;

namespace {

std::string write_small_job(const std::string& name, const std::string& extra = "") {
  const std::string path = test_tmp(name);
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 1}\n"
                         "model: {layers: 4, hidden: 2048, heads: 16, kv_heads: 8, ffn_hidden: 5632, vocab: 32000,"
                         " seq_len: 2048, mlp: swiglu}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 32, recompute: none}\n"
                      << extra;
  return path;
}

nlohmann::json without_timings(nlohmann::json j) {
  j.erase("seconds");
  j.erase("fast_seconds");
  return j;
}

}  // namespace

TEST(FastPlanSearch, RanksLikeTheReplay) {
  PlanSearchOptions o;
  o.replay_top = 100000;  // replay every fitting plan
  const PlanSearchResult r = search_plans(write_small_job("fast_rank.yaml"), {}, o);
  ASSERT_GE(r.fit, 20u);
  ASSERT_EQ(r.replayed, r.fit);
  std::vector<double> fast, replay;
  for (const PlanCandidate& c : r.plans) fast.push_back(c.fast.step_time_s), replay.push_back(c.result.step_time_s);
  EXPECT_GE(spearman(fast, replay), 0.95);
  // The replay's best (plans are sorted by replayed time) is among the fast tier's best 5.
  std::vector<double> sorted_fast = fast;
  std::sort(sorted_fast.begin(), sorted_fast.end());
  EXPECT_LE(fast.front(), sorted_fast[std::min<size_t>(4, sorted_fast.size() - 1)]);
  // Within 5 % on the fast tier's top 10.
  std::vector<size_t> by_fast(fast.size());
  for (size_t i = 0; i < by_fast.size(); ++i) by_fast[i] = i;
  std::stable_sort(by_fast.begin(), by_fast.end(), [&](size_t a, size_t b) { return fast[a] < fast[b]; });
  for (size_t i = 0; i < 10 && i < by_fast.size(); ++i) {
    const size_t j = by_fast[i];
    EXPECT_NEAR(fast[j], replay[j], 0.05 * replay[j]) << plan_label(r.plans[j].sets);
  }
}

TEST(FastPlanSearch, SpearmanOfKnownSeries) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // One swap of neighbours among 4: 1 - 6 * 2 / (4 * 15) = 0.8.
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
}

TEST(FastPlanSearch, SameAnswerWithAnyThreadCount) {
  const std::string path = write_small_job("fast_threads.yaml");
  PlanSearchOptions o;
  o.replay_top = 3;
  nlohmann::json one, two;
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 1);
    one = without_timings(plans_json(search_plans(path, {}, o)));
  }
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 4);
    two = without_timings(plans_json(search_plans(path, {}, o)));
  }
  EXPECT_EQ(one.dump(), two.dump());
  EXPECT_EQ(one["replayed"], 3);
}

TEST(FastPlanSearch, PurchasePicksTheCheapestClusterThatMeetsTheDeadlineAndSaysWhy) {
  // A small model on 1 or 2 nodes of H100 or H200, 2e10 tokens in 2 days: the answer meets the
  // deadline, costs its price times its time, is the cheapest that meets it, and every runner-up
  // says why it loses.
  const std::string path =
      write_small_job("purchase.yaml",
                      "failures: {mtbf_hours_per_node: 6300, restart_s: 600}\ncheckpoint: {every_steps: 500}\n"
                      "purchase:\n  tokens: 2e10\n  deadline_days: 2\n  nodes: [1, 2]\n  replay_top: 1\n  options:\n"
                      "    - {name: H100, node: dgx-h100, prices: {gpu_hour_usd: 6.155}}\n"
                      "    - {name: H200, node: dgx-h200, prices: {gpu_hour_usd: 6.305}}\n");
  const PurchaseResult r = search_purchase(path, {}, "", false);
  ASSERT_EQ(r.options.size(), 4u);
  ASSERT_TRUE(r.found);
  const PurchaseOption& w = r.options.front();
  EXPECT_TRUE(w.meets);
  EXPECT_TRUE(w.replayed);
  EXPECT_LE(w.days, 2.0);
  EXPECT_NEAR(w.cost_usd, w.usd_per_hour * w.days * 24, 1e-6 * w.cost_usd);
  EXPECT_NEAR(w.days * 86400 * w.goodput_tokens_per_s, 2e10, 1e-6 * 2e10);
  EXPECT_GT(w.failure_loss_fraction, 0.0);  // failures count against goodput
  for (size_t i = 1; i < r.options.size(); ++i) {
    EXPECT_FALSE(r.options[i].why.empty());
    if (r.options[i].meets) {
      EXPECT_GE(r.options[i].cost_usd, w.cost_usd);
    }
  }
  // Two nodes fail twice as often as one.
  for (const PurchaseOption& a : r.options)
    for (const PurchaseOption& b : r.options)
      if (a.option_name == b.option_name && a.nodes == 2 * b.nodes) {
        EXPECT_GT(a.failure_loss_fraction, 1.5 * b.failure_loss_fraction);
      }
}

TEST(FastPlanSearch, PurchaseWithoutDeadlineOrBudgetIsAClearError) {
  const std::string path = write_small_job("purchase_bad.yaml",
                                           "purchase:\n  tokens: 2e10\n  nodes: [1]\n  options:\n    - {name: H100, "
                                           "node: dgx-h100, prices: {gpu_hour_usd: 6}}\n");
  try {
    search_purchase(path, {}, "", false);
    FAIL() << "no error";
  } catch (const stacksim::config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deadline"), std::string::npos) << e.what();
  }
}

// The fast tier runs the software stack the replay runs: a profile's slower kernels and
// collectives (compute efficiency 0.6, communication efficiency 0.5, 5 us per kernel) move its
// estimate as they move the replay's, and it stays within 5 % of the replay with the profile on.
// A fast tier that ignored the profile would keep the reference estimate, ~1.5x below the replay.
TEST(FastPlanSearch, FastTierHonoursTheSoftwareProfile) {
  const Scenario sc = load_scenario(write_small_job("fast_stack.yaml"), {});
  TrainingSetup reference = sc.training, slow = sc.training;
  slow.software.params.compute_efficiency = 0.6;
  slow.software.params.comm_efficiency = 0.5;
  slow.software.params.kernel_gap_s = 5e-6;
  ASSERT_FALSE(slow.software.params.identity());
  const stacksim::workload::ParallelPlan plan = plan_as_run(slow, 80e9);
  FastTier fast_ref(reference), fast_slow(slow);
  const double ref_fast = fast_ref.estimate(plan).step_time_s, slow_fast = fast_slow.estimate(plan).step_time_s;
  const double slow_replay = simulate_training(fast_slow.setup_for(plan), RunOptions{}).step_time_s;
  EXPECT_GT(slow_fast, 1.4 * ref_fast);
  EXPECT_NEAR(slow_fast, slow_replay, 0.05 * slow_replay);
}

// ZeRO-3 gathers per module (DeepSpeed): a layer's parameters in k all-gathers one after another,
// each paying the ring's per-rank steps. On 16 H100 nodes (128 ranks, 15 network steps of 9.6 us
// per ring, network.yaml) a small model's step grows by at least half of (k - 1) gathers x 2
// passes (forward, backward) x layers x 15 x 9.6 us, in the replay and in the fast tier alike
// (measured: replay 8.7 -> 24.5 ms for k = 1 -> 7, fast tier 10.4 -> 33.9 ms).
TEST(FastPlanSearch, PerModuleZero3GathersPayTheRingLatencyEachTime) {
  const std::string path = test_tmp("zero3_gathers.yaml");
  std::ofstream(path)
      << "cluster: {node: dgx-h100, nodes: 16}\n"
         "model: {layers: 4, hidden: 1024, heads: 8, ffn_hidden: 4096, vocab: 32000, seq_len: 1024}\n"
         "parallelism: {tp: 1, pp: 1, dp: 128, zero: 3, micro_batch: 1, global_batch: 128, recompute: none}\n";
  const Scenario sc = load_scenario(path, {});
  TrainingSetup one = sc.training, seven = sc.training;
  seven.plan.fsdp_gathers_per_layer = 7;
  const double t1 = simulate_training(one, RunOptions{}).step_time_s,
               t7 = simulate_training(seven, RunOptions{}).step_time_s;
  const double floor_s = 0.5 * 6 * 2 * 4 * 15 * 9.6e-6;
  EXPECT_GT(t7 - t1, floor_s);
  const stacksim::workload::ParallelPlan plan = plan_as_run(seven, 80e9);
  // The fast tier sees the same added latency (it runs ~20 % high in this comm-bound corner at
  // k = 1 already): its increase within 50 % of the replay's.
  FastTier fast7(seven), fast1(one);
  const double f7 = fast7.estimate(plan).step_time_s, f1 = fast1.estimate(plan_as_run(one, 80e9)).step_time_s;
  EXPECT_GT(f7 - f1, floor_s);
  EXPECT_NEAR(f7 - f1, t7 - t1, 0.5 * (t7 - t1));
  // Bad input: more gathers than a layer has modules is refused with the key named.
  EXPECT_THROW(load_scenario(path, {"parallelism.fsdp_gathers_per_layer=65"}), stacksim::config::InputError);
}

// A DeepSeek-V3-style MoE step on 32 H800 (MLA, 64 routed experts over EP with DeepEP's
// once-per-node dispatch, DualPipe, FP8): the fast tier within 3 % of the replay. An F&B pair's
// two chunks send their all-to-alls through the same NICs, two context-parallel collectives
// under one attention share their links, and DualPipe's item order leaves more bubble than the
// report's formula; before the fast tier modelled these it read -1.4 / -8.7 / -3.9 % here
// (the bundled DeepSeek-V3's top 10: up to -27 %).
TEST(FastPlanSearch, DeepSeekStyleMoeStepWithinThreePercentOfTheReplay) {
  const std::string path = test_tmp("fast_moe.yaml");
  std::ofstream(path)
      << "cluster: {node: hgx-h800, nodes: 4, nic: cx7-ndr400}\n"
         "model: {layers: 9, hidden: 2048, heads: 16, seq_len: 4096, ffn_hidden: 8192, vocab: 32000, mlp: swiglu,\n"
         "  norm: rmsnorm, mla: {q_lora_rank: 768, kv_lora_rank: 256, qk_rope_head_dim: 64, qk_nope_head_dim: 128,\n"
         "  v_head_dim: 128}, moe: {experts: 64, top_k: 8, shared_experts: 1, first_dense_layers: 1,\n"
         "  expert_ffn_hidden: 1024, groups: 8, groups_per_token: 4}}\n"
         "parallelism: {tp: 1, pp: 4, dp: 8, ep: 8, schedule: dualpipe, first_stage_layers: 3, micro_batch: 1,\n"
         "  global_batch: 128, recompute: selective, zero: 1, precision: fp8, ep_dispatch: deepep}\n";
  const std::vector<std::vector<std::string>> plans{
      {},
      {"parallelism.dp=4", "parallelism.cp=2"},
      {"parallelism.pp=2", "parallelism.dp=16", "parallelism.ep=16", "parallelism.first_stage_layers=5"}};
  for (const auto& sets : plans) {
    const Scenario sc = load_scenario(path, sets);
    FastTier tier(sc.training);
    const stacksim::workload::ParallelPlan plan = plan_as_run(sc.training, tier.gpu_memory_bytes());
    const double fast = tier.estimate(plan).step_time_s;
    const double replay = simulate_training(tier.setup_for(plan), RunOptions::step_only()).step_time_s;
    EXPECT_NEAR(fast, replay, 0.03 * replay) << plan_label(sets);
  }
}

// ZeRO-2 with overlapped parameter gathers under an interleaved pipeline: the gathers run bucket
// after bucket from the step's start, chunk after chunk, and each chunk's first forward (a round
// of pp forwards after the previous chunk's) waits for its layers' buckets. Here (tp 8, one
// data-parallel rank per node) gathering a layer takes about ten times its forward, so the later
// chunks' gathers hold the warm-up back, not the first chunk's, which the fast tier alone read
// before: -12.3 % here then, -3.3 % with every chunk's gathers, -0.6 % since the pipeline is
// walked item by item (pipeline_walk.hpp). The bundled 405B's tp 4 pp 4 cp 8 vp 8 plan went from
// -7.3 % to within 3 %.
TEST(FastPlanSearch, InterleavedZero2GathersOfEveryChunkDelayTheWarmUp) {
  const std::string path = test_tmp("fast_zero2_interleaved.yaml");
  std::ofstream(path) << "cluster: {node: dgx-h100, nodes: 16}\n"
                         "model: {layers: 16, hidden: 8192, heads: 64, kv_heads: 8, ffn_hidden: 28672, vocab: 32000,"
                         " seq_len: 1024, mlp: swiglu}\n"
                         "parallelism: {tp: 8, pp: 2, vp: 4, dp: 8, zero: 2, micro_batch: 1, global_batch: 64,"
                         " recompute: none}\n";
  const Scenario sc = load_scenario(path, {});
  FastTier tier(sc.training);
  const stacksim::workload::ParallelPlan plan = plan_as_run(sc.training, tier.gpu_memory_bytes());
  const double fast = tier.estimate(plan).step_time_s;
  const double replay = simulate_training(tier.setup_for(plan), RunOptions::step_only()).step_time_s;
  EXPECT_NEAR(fast, replay, 0.02 * replay);
}

namespace {
// The fast tier's step against the replay's for a bundled scenario under `sets`: fast / replay - 1.
double fast_error(const std::string& scenario, const std::vector<std::string>& sets) {
  const Scenario sc = load_scenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + scenario, sets);
  FastTier tier(sc.training);
  const stacksim::workload::ParallelPlan plan = plan_as_run(sc.training, tier.gpu_memory_bytes());
  const double fast = tier.estimate(plan).step_time_s;
  const double replay = simulate_training(tier.setup_for(plan), RunOptions::step_only()).step_time_s;
  return fast / replay - 1;
}
}  // namespace

// Story (b)'s fabric, 4:1 oversubscribed, with tp 2: the two data-parallel groups' reductions run
// at once over the same leaf uplinks. Estimated one group alone, the fast tier read -10.0 %; with
// every group of the kind at once (coll::estimate_concurrent_seconds), +1.6 %.
TEST(FastPlanSearch, DataParallelGroupsShareAnOversubscribedFabric) {
  const double err = fast_error("story-dp-oversubscribed-fabric.yaml",
                                {"parallelism.tp=2", "parallelism.dp=128", "parallelism.micro_batch=2",
                                 "parallelism.zero=2", "parallelism.sequence_parallel=true"});
  EXPECT_NEAR(err, 0.0, 0.04);
}

// The same fabric with pp 2 vp 8 and two micro-batches: every forward is warm-up and every
// backward cool-down, so each chunk boundary waits for the micro-batch to come round the ring
// (both stages and both sends). The per-stage closed form read -9.5 %; the walked item order
// (pipeline_walk.hpp) +0.8 %.
TEST(FastPlanSearch, InterleavedWarmUpWaitsForTheRing) {
  const double err = fast_error("story-dp-oversubscribed-fabric.yaml",
                                {"parallelism.pp=2", "parallelism.vp=8", "parallelism.dp=128", "parallelism.zero=2",
                                 "parallelism.stage_layers=[1,2,2,2,2,2,2,2,2,1,1,1,1,1,1,1]"});
  EXPECT_NEAR(err, 0.0, 0.03);
}

// Story (g)'s offloaded optimizer with tp 2 pp 2 dp 2 on one DGX A100: each reduced gradient shard
// crosses to the host in fp32 and the updated 16-bit shard comes back, over the PCIe tree that
// the stage's GPUs share. With the host's Adam alone the fast tier read -12.3 %; with the copies,
// within 1 %.
TEST(FastPlanSearch, OffloadedOptimizerCopiesCrossThePcieTree) {
  const double err = fast_error(
      "story-offload-finetune.yaml",
      {"parallelism.tp=2", "parallelism.pp=2", "parallelism.dp=2", "parallelism.zero=2", "parallelism.micro_batch=1",
       "parallelism.recompute=none", "parallelism.offload_params=false", "parallelism.sequence_parallel=true"});
  EXPECT_NEAR(err, 0.0, 0.03);
}

// FSDP under a pipeline keeps each stage's parameters gathered for all its micro-batches and
// reduce-scatters after the last one only: the gradient cast/copy and the reduce-scatter's SMs
// slow that last backward, not every micro-batch's. On story (c)'s PCIe server (tp 1 pp 2 dp 4)
// the fast tier charged them to every backward: +4.3 %; now within 1 %.
TEST(FastPlanSearch, FsdpKeptUnderAPipelineReducesAfterTheLastMicroBatchOnly) {
  const double err =
      fast_error("story-pcie-vs-nvswitch.yaml",
                 {"parallelism.tp=1", "parallelism.pp=2", "parallelism.dp=4", "parallelism.zero=3",
                  "parallelism.micro_batch=1", "parallelism.recompute=none", "parallelism.sequence_parallel=false"});
  EXPECT_NEAR(err, 0.0, 0.02);
}

// DualPipe's second direction starts one forward after the first on the middle ranks (and on both
// ranks of a two-stage pipeline): with ZeRO-2's overlapped gathers over story (c)'s PCIe tree,
// its gathers hold that forward back too. Counting the first direction's alone read -11.1 %;
// both, -7.9 % (the rest: the gathers' start against the reverse direction's input, left out).
TEST(FastPlanSearch, DualPipeSecondDirectionWaitsForItsGathers) {
  const double err = fast_error(
      "story-pcie-vs-nvswitch.yaml",
      {"parallelism.tp=1", "parallelism.pp=2", "parallelism.dp=4", "parallelism.zero=2", "parallelism.micro_batch=1",
       "parallelism.recompute=full", "parallelism.sequence_parallel=false", "parallelism.schedule=dualpipe"});
  EXPECT_NEAR(err, 0.0, 0.09);
}
