// Closed forms and contracts of the serving simulator core.
#include <gtest/gtest.h>

#include <cmath>

#include "config/error.hpp"
#include "models/serving/metrics.hpp"
#include "models/serving/step_cost.hpp"
#include "tests/serving/fixtures.hpp"

namespace stacksim::serving {
namespace {

using testing::dgx_h100;
using testing::fixed_lengths;
using testing::llama3_70b;
using testing::tp8_fp8;

std::shared_ptr<const topo::Cluster> cluster_of(const ServingHardware& h) {
  return std::make_shared<topo::Cluster>(topo::build_cluster(h.cluster));
}

TEST(StepCost, Batch1DecodeReadsTheWeightsOnceAtHbmRate) {
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.engine.step_overhead_cuda_graph_s = 0;
  c.engine.per_sequence_overhead_s = 0;
  const workload::ModelConfig m = llama3_70b();
  const MemoryPlan plan = plan_memory(c, m, h.gpu);
  StepCostModel model(c, c.parallel, m, h.gpu, cluster_of(h), coll::tuning_for(h.cluster.node, h.cluster.nic), 0);
  StepShape s;
  s.decode_seqs = 1;
  s.decode_query_tokens = 1;
  s.decode_context_tokens = 1;
  s.logits_tokens = 1;
  const StepCost cost = model.cost(s);
  // A decode step reads every weight but the input embedding's (a row lookup).
  const double input_embedding_bytes = static_cast<double>(m.vocab) * m.hidden / 8 * 2;
  const double weight_s = (plan.weights_bytes - input_embedding_bytes) / (h.gpu.hbm_Bps * h.gpu.hbm_efficiency);
  // Launch floors: per layer 5 GEMMs (QKV, output, gate/up, down... as launched), attention and 3
  // element-wise kernels; 2 all-reduces.
  const double tp_comm_s = cost.by_category[static_cast<size_t>(StepCategory::TpComm)];
  const double launch_s = m.layers * 9 * h.gpu.kernel_overhead_s;
  EXPECT_GT(cost.gpu_seconds - tp_comm_s, weight_s * 0.99);
  EXPECT_LT(cost.gpu_seconds - tp_comm_s, weight_s * 1.03 + launch_s);
  EXPECT_GT(tp_comm_s, 0);
}

TEST(StepCost, BusiestAttentionDpRankRunsItsDecodesAndTheWholePrompt) {
  // Attention DP: each of 8 ranks decodes an eighth of the sequences; a new prompt goes to one
  // rank, which still runs its decodes, and every rank waits for it (TensorRT-LLM tech blog 10).
  // So a dp-8 step costs what one rank's share of decodes plus the whole prompt costs on dp 1.
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.engine.step_overhead_cuda_graph_s = 0;
  c.engine.per_sequence_overhead_s = 0;
  const workload::ModelConfig m = llama3_70b();
  const auto tuning = coll::tuning_for(h.cluster.node, h.cluster.nic);
  Parallelism dp8;
  dp8.tp = 1;
  dp8.dp = 8;
  Parallelism one;
  one.tp = 1;
  StepCostModel ranks(c, dp8, m, h.gpu, cluster_of(h), tuning, 0);
  StepCostModel rank(c, one, m, h.gpu, cluster_of(h), tuning, 0);
  StepShape all;
  all.decode_seqs = all.decode_query_tokens = 512;
  all.decode_context_tokens = 512.0 * 1000;
  all.prefill_seqs = 1;
  all.prefill_tokens = all.largest_item_tokens = 1024;
  all.prefill_pair_tokens = all.largest_prefill_pairs = 1024.0 * 512;
  all.prefill_context_tokens = 1024;
  StepShape busiest = all;
  busiest.decode_seqs = busiest.decode_query_tokens = 64;
  busiest.decode_context_tokens = 64.0 * 1000;
  EXPECT_NEAR(ranks.cost(all).seconds, rank.cost(busiest).seconds, 1e-12);
  // More than the prompt alone (the earlier rule: max(tokens / dp, largest prompt)).
  StepShape prompt_only = busiest;
  prompt_only.decode_seqs = prompt_only.decode_query_tokens = 0;
  prompt_only.decode_context_tokens = 0;
  EXPECT_GT(ranks.cost(all).seconds, rank.cost(prompt_only).seconds);
}

TEST(StepCost, SixteenBitAttentionReadsItsExtraBytesAtBatch1) {
  // Attention projections kept at 16 bits in an 8-bit checkpoint: a batch-1 decode reads each of
  // their weights with one more byte.
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  const workload::ModelConfig m = llama3_70b();
  const auto tuning = coll::tuning_for(h.cluster.node, h.cluster.nic);
  StepCostModel fp8(c, c.parallel, m, h.gpu, cluster_of(h), tuning, 0);
  c.attention_weights_dtype = Dtype::BF16;
  StepCostModel bf16_attention(c, c.parallel, m, h.gpu, cluster_of(h), tuning, 0);
  StepShape s;
  s.decode_seqs = s.decode_query_tokens = s.decode_context_tokens = s.logits_tokens = 1;
  const double extra_bytes = m.layers * m.attention_gemm_params() / c.parallel.tp * 1.0;
  const double extra_s = extra_bytes / (h.gpu.hbm_Bps * h.gpu.hbm_efficiency);
  EXPECT_NEAR(bf16_attention.cost(s).gpu_seconds - fp8.cost(s).gpu_seconds, extra_s, 0.02 * extra_s);
}

TEST(Memory, KvCapacityIsFreeHbmOverBytesPerToken) {
  const ServingHardware h = dgx_h100();
  const ServingConfig c = tp8_fp8();
  const workload::ModelConfig m = llama3_70b();
  const MemoryPlan p = plan_memory(c, m, h.gpu);
  // 80 layers x 1 KV head per GPU (8 over tp 8) x 128 x (K and V) x 1 byte.
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token, 80.0 * 1 * 128 * 2 * 1);
  const double free_bytes = h.gpu.memory_bytes * c.gpu_memory_utilization - p.weights_bytes - p.workspace_bytes;
  const double tokens = std::floor(free_bytes / p.kv_bytes_per_token);
  EXPECT_LE(static_cast<double>(p.kv_capacity_tokens), tokens);
  EXPECT_GT(static_cast<double>(p.kv_capacity_tokens), tokens - c.block_size_tokens);
  // The weights: ~70.6B parameters, 1 byte each over 8 GPUs, plus 16-bit embeddings.
  EXPECT_NEAR(p.weights_bytes / 1e9, 70.6 / 8 + 2.1 / 8 * 2, 0.4);
}

TEST(Queueing, MD1MeanWaitAtLowLoad) {
  // One sequence at a time, 1-token prompts and outputs: every request is one identical step, so
  // the instance is an M/D/1 queue: Wq = rho / (2 mu (1 - rho)).
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.max_num_seqs = 1;
  const workload::ModelConfig m = llama3_70b();
  const ServingResult one = simulate_serving(c, fixed_lengths(ArrivalMode::Offline, 1, 1, 1), m, h);
  const double service_s = one.e2e_latency_s.mean;
  ASSERT_GT(service_s, 0);
  for (double rho : {0.2, 0.5}) {
    Workload w = fixed_lengths(ArrivalMode::Poisson, 40000, 1, 1);
    w.rate_per_s = rho / service_s;
    w.seed = 7;
    const ServingResult r = simulate_serving(c, w, m, h);
    const double expected = rho * service_s / (2 * (1 - rho));
    EXPECT_NEAR(r.queueing_s.mean, expected, 0.06 * expected) << "rho " << rho;
    EXPECT_NEAR(r.e2e_latency_s.mean, expected + service_s, 0.03 * (expected + service_s));
  }
}

TEST(Throughput, OfflineBoundedByRoofline) {
  const ServingHardware h = dgx_h100();
  const ServingConfig c = tp8_fp8();
  const workload::ModelConfig m = llama3_70b();
  const ServingResult r = simulate_serving(c, fixed_lengths(ArrivalMode::Offline, 2000, 1000, 500), m, h);
  EXPECT_EQ(r.completed_requests, 2000);
  // Compute roofline: every token costs 2 x parameters FLOPs on 8 GPUs at the FP8 peak.
  const double flops_per_s = 8 * h.gpu.peak("fp8");
  EXPECT_LT(r.total_tokens_per_s * 2 * m.total_params(), flops_per_s);
  // Memory roofline: a step emits at most max_num_seqs tokens and reads the weights once.
  const MemoryPlan p = plan_memory(c, m, h.gpu);
  const double min_step_s = p.weights_bytes * 0.9 / (h.gpu.hbm_Bps * h.gpu.hbm_efficiency);
  EXPECT_LT(r.output_tokens_per_s, c.max_num_seqs / min_step_s);
  EXPECT_GT(r.output_tokens_per_s, 0);
}

TEST(Determinism, SameInputSameOutput) {
  const ServingHardware h = dgx_h100();
  const ServingConfig c = tp8_fp8();
  Workload w = fixed_lengths(ArrivalMode::Poisson, 3000, 0, 0);
  w.input.kind = w.output.kind = LengthDist::Kind::Normal;
  w.input.mean_tokens = 800;
  w.input.stddev_tokens = 300;
  w.output.mean_tokens = 200;
  w.output.stddev_tokens = 80;
  w.rate_per_s = 20;
  w.seed = 3;
  const ServingResult a = simulate_serving(c, w, llama3_70b(), h);
  const ServingResult b = simulate_serving(c, w, llama3_70b(), h);
  EXPECT_EQ(a.ttft_ms.p99, b.ttft_ms.p99);
  EXPECT_EQ(a.tpot_ms.mean, b.tpot_ms.mean);
  EXPECT_EQ(a.e2e_latency_s.p90, b.e2e_latency_s.p90);
  EXPECT_EQ(a.output_tokens_per_s, b.output_tokens_per_s);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  w.seed = 4;
  EXPECT_NE(simulate_serving(c, w, llama3_70b(), h).ttft_ms.p99, a.ttft_ms.p99);
}

// TP8 FP8 with room for ~20k tokens of KV and 256 sequences: 256 sequences growing to 2k tokens
// cannot all fit.
ServingConfig tiny_kv_cache(const ServingHardware& h, const workload::ModelConfig& m) {
  ServingConfig c = tp8_fp8();
  const MemoryPlan full = plan_memory(c, m, h.gpu);
  c.gpu_memory_utilization =
      (full.weights_bytes + full.workspace_bytes + 20000 * full.kv_bytes_per_token) / h.gpu.memory_bytes;
  c.max_num_seqs = 256;
  return c;
}

TEST(KvCache, PreemptsWhenTheCacheIsTiny) {
  const ServingHardware h = dgx_h100();
  const workload::ModelConfig m = llama3_70b();
  ServingConfig c = tiny_kv_cache(h, m);
  const ServingResult r = simulate_serving(c, fixed_lengths(ArrivalMode::Offline, 600, 500, 1500), m, h);
  EXPECT_EQ(r.completed_requests, 600);
  EXPECT_GT(r.preemptions, 0);
  EXPECT_EQ(r.bottleneck, "KV-cache capacity");
  // Reserving the whole request up front (TensorRT-LLM's GUARANTEED_NO_EVICT) never preempts.
  c.engine.kv_admission = KvAdmission::ReserveFull;
  EXPECT_EQ(simulate_serving(c, fixed_lengths(ArrivalMode::Offline, 200, 500, 1500), m, h).preemptions, 0);
}

TEST(KvCache, PrefillFirstNeverSkipsDecodesForAPromptItCannotAdmit) {
  // A prefill_first engine runs a step of prompts alone when the waiting head can be admitted. It
  // used to test that against the free blocks while admission keeps a 1 % watermark: with the free
  // blocks in between, the decodes were skipped, the prompt refused, and nothing ever freed a
  // block (a stall, found by the max-rate search on the DeepSeek-R1 scenario at 4k prompts).
  const ServingHardware h = dgx_h100();
  const workload::ModelConfig m = llama3_70b();
  ServingConfig c = tiny_kv_cache(h, m);
  c.block_size_tokens = 1;  // SGLang's token-granular pool: the free count can land anywhere
  c.engine.scheduler = SchedulerPolicy::PrefillFirst;
  for (long long input : {500, 700, 900, 1100}) {
    const ServingResult r = simulate_serving(c, fixed_lengths(ArrivalMode::Offline, 300, input, 1500), m, h);
    EXPECT_EQ(r.completed_requests, 300) << input;
  }
}

TEST(Speculative, TokensPerStepClosedForm) {
  SpeculativeConfig s;
  s.draft_tokens = 3;
  s.acceptance_rate = 0.7;
  EXPECT_NEAR(s.tokens_per_step(), (1 - std::pow(0.7, 4)) / 0.3, 1e-12);
  // Fewer steps per request: TPOT falls at batch 1 when the draft is cheap.
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  const auto w = fixed_lengths(ArrivalMode::Concurrency, 20, 200, 300);
  Workload one = w;
  one.concurrency = 1;
  const double plain = simulate_serving(c, one, llama3_70b(), h).tpot_ms.mean;
  c.speculative = s;
  c.speculative.draft_cost_ratio = 0.02;
  const double spec = simulate_serving(c, one, llama3_70b(), h).tpot_ms.mean;
  EXPECT_LT(spec, plain / 1.5);
  // An MTP head (draft_cost_ratio 0): one layer and the LM head per draft token, timed like the
  // target's; between the free draft and a full-model draft.
  c.speculative.draft_cost_ratio = 0;
  const double mtp = simulate_serving(c, one, llama3_70b(), h).tpot_ms.mean;
  c.speculative.draft_cost_ratio = 0;
  EXPECT_GT(mtp, spec);
  EXPECT_LT(mtp, plain);
}

TEST(Disaggregated, PrefillAndDecodePoolsHandOverTheKv) {
  const ServingHardware h = dgx_h100(2);
  ServingConfig c = tp8_fp8();
  c.disaggregated.enabled = true;
  c.disaggregated.prefill.parallel.tp = 8;
  c.disaggregated.decode.parallel.tp = 8;
  Workload w = fixed_lengths(ArrivalMode::Poisson, 500, 2000, 200);
  w.rate_per_s = 5;
  const ServingResult r = simulate_serving(c, w, llama3_70b(), h);
  EXPECT_EQ(r.completed_requests, 500);
  EXPECT_EQ(r.gpus, 16);
  EXPECT_GT(r.step_seconds.at("pd_transfer"), 0);
  // The KV crosses nodes (InfiniBand): ~2000 tokens x 320 KiB... takes > 0.1 ms per request.
  EXPECT_GT(r.step_seconds.at("pd_transfer") / 500, 1e-4);
}

TEST(BadInput, WeightsThatDoNotFit) {
  ServingConfig c = tp8_fp8();
  c.parallel.tp = 1;
  c.weights_dtype = c.activations_dtype = Dtype::BF16;
  try {
    plan_memory(c, llama3_70b(), dgx_h100().gpu);
    FAIL() << "expected InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "serving.tp");
    EXPECT_NE(std::string(e.what()).find("weights need"), std::string::npos);
  }
}

TEST(BadInput, ZeroKvBlocks) {
  ServingConfig c = tp8_fp8();
  const MemoryPlan p = plan_memory(c, llama3_70b(), dgx_h100().gpu);
  c.gpu_memory_utilization = (p.weights_bytes + p.workspace_bytes + 1) / p.hbm_bytes;
  try {
    plan_memory(c, llama3_70b(), dgx_h100().gpu);
    FAIL() << "expected InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "serving.gpu_memory_utilization");
  }
}

TEST(BadInput, TraceTimesNegativeOrUnsorted) {
  Workload w;
  w.mode = ArrivalMode::Trace;
  w.origin = "trace.csv";
  w.trace = {{0.0, 10, 10}, {-1.0, 10, 10}};
  EXPECT_THROW(check_workload(w), config::InputError);
  w.trace = {{1.0, 10, 10}, {0.5, 10, 10}};
  try {
    check_workload(w);
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "serving.workload.trace");
    EXPECT_NE(e.reason().find("row 2"), std::string::npos);
  }
  Workload poisson = fixed_lengths(ArrivalMode::Poisson, 10, 10, 10);
  EXPECT_THROW(check_workload(poisson), config::InputError);  // no rate
  EXPECT_THROW(parse_dtype("fp12"), std::invalid_argument);
  EXPECT_THROW(load_engine_profile("vllmm"), config::InputError);
}

TEST(RateSearch, FindsTheKneeAndRefusesImpossibleSlos) {
  const ServingHardware h = dgx_h100();
  const ServingConfig c = tp8_fp8();
  const Workload w = fixed_lengths(ArrivalMode::Poisson, 1500, 1000, 200);
  Slo slo;
  slo.ttft_ms = {2000, "p99"};
  slo.tpot_ms = {50, "p99"};
  const RateSearchResult r = max_rate_under_slo(c, w, llama3_70b(), h, slo);
  ASSERT_TRUE(r.feasible) << r.verdict;
  EXPECT_GT(r.max_rate_per_s, 0);
  EXPECT_TRUE(meets_slo(r.at_max_rate, slo));
  Slo impossible;
  impossible.tpot_ms = {0.01, "p50"};
  const RateSearchResult none = max_rate_under_slo(c, w, llama3_70b(), h, impossible);
  EXPECT_FALSE(none.feasible);
  EXPECT_NE(none.verdict.find("TPOT"), std::string::npos);
  EXPECT_THROW(max_rate_under_slo(c, w, llama3_70b(), h, Slo{}), config::InputError);
}

TEST(Metrics, PercentilesExactThenHistogram) {
  StreamingStat s;
  for (int i = 1; i <= 101; ++i) s.add(i);
  EXPECT_DOUBLE_EQ(s.percentile(50), 51);
  EXPECT_DOUBLE_EQ(s.percentile(99), 100);
  EXPECT_DOUBLE_EQ(s.mean(), 51);
  StreamingStat big;
  const long long n = 3 * static_cast<long long>(StreamingStat::kExactSamples);
  for (long long i = 1; i <= n; ++i) big.add(static_cast<double>(i));
  EXPECT_NEAR(big.percentile(90), 0.9 * n, 0.002 * n);
  EXPECT_DOUBLE_EQ(big.mean(), (n + 1) / 2.0);
}

}  // namespace
}  // namespace stacksim::serving

namespace stacksim::serving {
namespace {

TEST(Scheduler, UnchunkedPromptLongerThanTheBudgetRunsWhole) {
  // 20k-token prompts over an 8k token budget: without chunking each runs whole as its step's
  // only prompt, beside the running decodes; throughput stays close to the chunked engine's.
  const ServingHardware h = testing::dgx_h100();
  ServingConfig c = testing::tp8_fp8();
  c.max_num_batched_tokens = 8192;
  const Workload w = testing::fixed_lengths(ArrivalMode::Offline, 60, 20000, 500);
  c.chunked_prefill = true;
  const ServingResult chunked = simulate_serving(c, w, testing::llama3_70b(), h);
  c.chunked_prefill = false;
  const ServingResult whole = simulate_serving(c, w, testing::llama3_70b(), h);
  EXPECT_EQ(whole.completed_requests, 60);
  EXPECT_NEAR(whole.output_tokens_per_s, chunked.output_tokens_per_s, 0.3 * chunked.output_tokens_per_s);
}

TEST(Scheduler, PipelineStagesAddLatencyAndThroughput) {
  // pp 2 x tp 4 holds the same weights per GPU as tp 8, but a token crosses both stages in turn,
  // so a lone request's step reads twice the bytes per GPU in sequence: one more W/8 over the HBM
  // rate, communication aside. At load the two in-flight batches (virtual engines) recover it.
  const ServingHardware h = testing::dgx_h100();
  ServingConfig tp8 = testing::tp8_fp8();
  ServingConfig pp2 = tp8;
  pp2.parallel.tp = 4;
  pp2.parallel.pp = 2;
  const workload::ModelConfig m = testing::llama3_70b();
  const auto cluster = cluster_of(h);
  const coll::CommTuning tuning = coll::tuning_for(h.cluster.node, h.cluster.nic);
  StepCostModel c8(tp8, tp8.parallel, m, h.gpu, cluster, tuning, 0);
  StepCostModel c42(pp2, pp2.parallel, m, h.gpu, cluster, tuning, 0);
  StepShape one;
  one.decode_seqs = one.decode_query_tokens = one.logits_tokens = 1;
  one.decode_context_tokens = 100;
  auto compute_s = [](const StepCost& c) {
    return c.gpu_seconds - c.by_category[static_cast<size_t>(StepCategory::TpComm)] -
           c.by_category[static_cast<size_t>(StepCategory::PpComm)];
  };
  const MemoryPlan p8 = plan_memory(tp8, m, h.gpu);
  const double layer_weights_s =
      (p8.weights_bytes - 2.0 * m.vocab * m.hidden * 2 / 8) / (h.gpu.hbm_Bps * h.gpu.hbm_efficiency);
  const double extra_s = compute_s(c42.cost(one)) - compute_s(c8.cost(one));
  EXPECT_NEAR(extra_s, layer_weights_s, 0.1 * layer_weights_s);
  const Workload offline = testing::fixed_lengths(ArrivalMode::Offline, 2000, 500, 300);
  const double thr8 = simulate_serving(tp8, offline, m, h).output_tokens_per_s;
  const double thr42 = simulate_serving(pp2, offline, m, h).output_tokens_per_s;
  EXPECT_GT(thr42, 0.6 * thr8);
}

}  // namespace
}  // namespace stacksim::serving
