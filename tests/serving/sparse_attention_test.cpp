// Capped attention in serving steps: DeepSeek Sparse Attention's top-k keys (and its indexer), and
// sliding windows, against closed forms.
#include <gtest/gtest.h>

#include "models/serving/step_cost.hpp"
#include "models/workload/model_catalog.hpp"
#include "tests/serving/fixtures.hpp"

namespace stacksim::serving {
namespace {

using testing::dgx_h100;
using testing::tp8_fp8;

workload::ModelConfig catalogue(const std::string& name) {
  const workload::CatalogModel* entry = workload::bundled_models().find(name);
  if (!entry) throw std::runtime_error("no catalogue model " + name);
  return entry->config;
}

double attention_s(const StepCost& c) {
  return c.by_category[static_cast<size_t>(StepCategory::AttentionCompute)] +
         c.by_category[static_cast<size_t>(StepCategory::KvRead)];
}

StepCostModel step_model(const ServingConfig& c, const workload::ModelConfig& m, const hw::GpuSpec& gpu) {
  const ServingHardware h = dgx_h100();
  return StepCostModel(c, c.parallel, m, gpu, std::make_shared<topo::Cluster>(topo::build_cluster(h.cluster)),
                       coll::tuning_for(h.cluster.node, h.cluster.nic), 0);
}

StepCostModel step_model(const ServingConfig& c, const workload::ModelConfig& m) {
  return step_model(c, m, dgx_h100().gpu);
}

// One decode step of `seqs` sequences at `context` tokens each, with the instance's capped sums.
StepShape decodes(long long seqs, double context, double cap) {
  StepShape s;
  s.decode_seqs = s.decode_query_tokens = s.logits_tokens = seqs;
  s.decode_context_tokens = static_cast<double>(seqs) * context;
  s.decode_attended_tokens = static_cast<double>(seqs) * (cap > 0 ? std::min(cap, context) : context);
  return s;
}

// One prompt of `tokens` in one chunk, as Instance::step sums it (dense_max: the engine's
// sparse_prefill_dense_max_tokens).
StepShape prompt(double tokens, double cap, double dense_max = 0) {
  StepShape s;
  s.prefill_seqs = 1;
  s.prefill_tokens = s.largest_item_tokens = static_cast<long long>(tokens);
  s.prefill_pair_tokens = s.largest_prefill_pairs = capped_pairs(0, tokens, 0);
  s.prefill_context_tokens = tokens;
  s.prefill_attended_pairs = capped_pairs(0, tokens, cap);
  s.prefill_attended_context = capped_context(0, tokens, cap);
  if (tokens <= dense_max) {
    s.short_prefill_tokens = s.prefill_tokens;
    s.short_prefill_pairs = s.prefill_pair_tokens;
    s.short_prefill_context = s.prefill_context_tokens;
  }
  s.logits_tokens = 1;
  return s;
}

TEST(CappedPairs, SumOfEachQueryCappedKeysInClosedForm) {
  // Uncapped: c x (prior + c / 2), the causal pairs.
  EXPECT_DOUBLE_EQ(capped_pairs(100, 50, 0), 50 * 125.0);
  // Every query already past the cap: c x cap.
  EXPECT_DOUBLE_EQ(capped_pairs(5000, 100, 2048), 100 * 2048.0);
  // A chunk that crosses the cap: the triangle up to it, then cap keys each.
  EXPECT_DOUBLE_EQ(capped_pairs(0, 4096, 2048), 2048.0 * 2048 / 2 + 2048.0 * 2048);
  // Chunking does not change the total (a prompt in two chunks = one chunk).
  EXPECT_NEAR(capped_pairs(0, 3000, 2048) + capped_pairs(3000, 5000, 2048), capped_pairs(0, 8000, 2048), 1e-6);
  EXPECT_DOUBLE_EQ(capped_context(5000, 100, 2048), 2148);
  EXPECT_DOUBLE_EQ(capped_context(100, 100, 0), 200);
}

TEST(SparseAttention, CatalogueV32IsV3WithTheIndexer) {
  const workload::ModelConfig v3 = catalogue("DeepSeek-V3"), v32 = catalogue("DeepSeek-V3.2");
  EXPECT_TRUE(v32.is_sparse_attention());
  EXPECT_FALSE(v3.is_sparse_attention());
  // The indexer: q from the 1536-wide query latent, a shared 128-wide key, 64 head weights.
  const double indexer = 1536.0 * 64 * 128 + 7168.0 * (128 + 64);
  EXPECT_DOUBLE_EQ(v32.indexer_params(), indexer);
  EXPECT_NEAR(v32.total_params() - v3.total_params(), 61 * indexer, 1);
  EXPECT_EQ(v32.attended_keys_cap(0), 2048);
}

TEST(SparseAttention, KvCacheHoldsTheIndexerKeyBesideTheLatent) {
  ServingConfig c = tp8_fp8();
  c.kv_dtype = Dtype::BF16;
  const workload::ModelConfig m = catalogue("DeepSeek-V3.2");
  // 61 layers x ((512 + 64) x 2 bytes + an FP8 128-wide key with a 4-byte scale).
  hw::GpuSpec gpu = dgx_h100().gpu;
  gpu.memory_bytes *= 2;  // room for FP8 weights over 8 GPUs
  EXPECT_DOUBLE_EQ(plan_memory(c, m, gpu).kv_bytes_per_token, 61.0 * (576 * 2 + 132));
}

TEST(SparseAttention, LongContextDecodeAttendsTopKNotTheWholeContext) {
  ServingConfig c = tp8_fp8();
  c.kv_dtype = Dtype::BF16;
  const workload::ModelConfig dense = catalogue("DeepSeek-V3"), sparse = catalogue("DeepSeek-V3.2");
  StepCostModel d = step_model(c, dense), s = step_model(c, sparse);
  // At 128k tokens of context the main attention reads 2048 latents per sequence, not 131072;
  // the indexer still reads all 131072 keys, but 132 bytes each instead of 1152.
  const StepCost dense_long = d.cost(decodes(64, 131072, 0)), sparse_long = s.cost(decodes(64, 131072, 2048));
  const double hbm = dgx_h100().gpu.hbm_Bps * dgx_h100().gpu.hbm_efficiency;
  const double dense_kv_s = 61.0 * 64 * 131072 * 1152 / hbm;
  const double sparse_kv_s = 61.0 * 64 * (2048.0 * 1152 + 131072.0 * 132) / hbm;
  EXPECT_NEAR(attention_s(dense_long), dense_kv_s, 0.15 * dense_kv_s);
  EXPECT_NEAR(attention_s(sparse_long), sparse_kv_s, 0.15 * sparse_kv_s);
  EXPECT_LT(attention_s(sparse_long), 0.25 * attention_s(dense_long));
  // Below top-k the sparse model attends everything and pays for the indexer besides.
  EXPECT_GT(attention_s(s.cost(decodes(64, 1024, 2048))), attention_s(d.cost(decodes(64, 1024, 0))));
}

TEST(SparseAttention, LatentPrefillPaysTheAbsorbedWidthAndThePaddedHeads) {
  // An engine whose sparse prefill kernel works in the latent form (576-wide keys, 512-wide values)
  // with at least 128 heads, against one that masks dense MLA attention (per-head 192 + 128): at
  // TP 2 (64 heads per GPU) and a prompt within top-k (every pair attended either way) the
  // latent form does 128 x 1088 / (64 x 320) = 6.8x the score and value FLOPs. HBM made free so
  // the FLOPs alone set the time.
  ServingConfig c = tp8_fp8();
  c.parallel.tp = 2;
  c.weights_dtype = c.activations_dtype = c.kv_dtype = Dtype::BF16;
  workload::ModelConfig m = catalogue("DeepSeek-V3.2");
  m.sparse.index_heads = 1;  // an indexer too small to matter: the main attention alone
  ServingConfig latent = c;
  latent.engine.sparse_prefill_latent = true;
  latent.engine.sparse_prefill_min_heads = 128;
  hw::GpuSpec gpu = dgx_h100().gpu;
  gpu.hbm_Bps *= 1e6;
  StepCostModel masked = step_model(c, m, gpu), absorbed = step_model(latent, m, gpu);
  const StepShape p = prompt(2048, 2048);
  EXPECT_NEAR(attention_s(absorbed.cost(p)) / attention_s(masked.cost(p)), 6.8, 0.05 * 6.8);
}

TEST(SparseAttention, ShortPromptsRunDenseMhaUnderTheEnginesLimit) {
  // SGLang's nsa backend runs prompts of up to 2048 tokens as standard MHA and longer ones with
  // the sparse latent kernel: a 1024-token prompt costs what the masked dense path costs, a
  // 16k-token one what the latent kernel costs.
  ServingConfig c = tp8_fp8();
  c.weights_dtype = c.activations_dtype = c.kv_dtype = Dtype::BF16;
  c.parallel.tp = 8;
  const workload::ModelConfig m = catalogue("DeepSeek-V3.2");
  ServingConfig latent = c, adaptive = c;
  latent.engine.sparse_prefill_latent = adaptive.engine.sparse_prefill_latent = true;
  latent.engine.sparse_prefill_min_heads = adaptive.engine.sparse_prefill_min_heads = 128;
  adaptive.engine.sparse_prefill_dense_max_tokens = 2048;
  StepCostModel masked_m = step_model(c, m), latent_m = step_model(latent, m), adaptive_m = step_model(adaptive, m);
  EXPECT_DOUBLE_EQ(attention_s(adaptive_m.cost(prompt(1024, 2048, 2048))),
                   attention_s(masked_m.cost(prompt(1024, 2048))));
  EXPECT_NE(attention_s(latent_m.cost(prompt(1024, 2048))), attention_s(masked_m.cost(prompt(1024, 2048))));
  EXPECT_DOUBLE_EQ(attention_s(adaptive_m.cost(prompt(16384, 2048, 2048))),
                   attention_s(latent_m.cost(prompt(16384, 2048))));
}

TEST(SparseAttention, LatentPrefillGathersALatentRowPerAttendedPair) {
  // Each query's top-k differ: the latent kernel reads one 1152-byte row (bf16 latent + rope) per
  // (query, key) pair and layer, 2048 keys per query past top-k, besides each token's 16-bit
  // queries and outputs over the 128 padded heads' 1088 latent dims. Compute made free.
  ServingConfig c = tp8_fp8();
  c.weights_dtype = c.activations_dtype = c.kv_dtype = Dtype::BF16;
  c.engine.sparse_prefill_latent = true;
  c.engine.sparse_prefill_min_heads = 128;
  c.parallel.tp = 8;
  workload::ModelConfig m = catalogue("DeepSeek-V3.2");
  m.sparse.index_heads = 1;
  hw::GpuSpec gpu = dgx_h100().gpu;
  gpu.attention_forward_efficiency = 1e6;
  StepCostModel model = step_model(c, m, gpu);
  const StepShape p = prompt(16384, 2048);
  const double pairs = capped_pairs(0, 16384, 2048);
  const double expected_s = 61.0 * (pairs * 1152 + 16384.0 * 128 * 1088 * 2) / (gpu.hbm_Bps * gpu.hbm_efficiency);
  EXPECT_NEAR(attention_s(model.cost(p)), expected_s, 0.05 * expected_s);
}

TEST(SlidingWindow, ServingDecodeOfWindowedLayersReadsTheWindowOnly) {
  // A Llama-3-70B-shaped model with a 4096-token window on every layer: at 32k context a decode
  // step reads an eighth of the KV the full-attention model reads.
  const ServingConfig c = tp8_fp8();
  workload::ModelConfig full = testing::llama3_70b(), windowed = full;
  windowed.sliding_window = 4096;
  StepCostModel f = step_model(c, full), w = step_model(c, windowed);
  EXPECT_DOUBLE_EQ(w.attended_keys_cap(), 4096);
  const double full_s = attention_s(f.cost(decodes(128, 32768, 0)));
  const double window_s = attention_s(w.cost(decodes(128, 32768, 4096)));
  EXPECT_NEAR(window_s / full_s, 1.0 / 8, 0.02);
}

}  // namespace
}  // namespace stacksim::serving
