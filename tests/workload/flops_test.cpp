// Training FLOP conventions: 6*N*tokens, the SC'21 formula and the recomputation counts.
#include <gtest/gtest.h>

#include "models/workload/flops.hpp"
#include "tests/workload/gpt_model.hpp"

namespace stacksim::workload {
namespace {

// GPT-3 175B (Brown et al. 2020; Narayanan et al. SC'21 Table 1).
ModelConfig gpt3() {
  ModelConfig m = gpt_model(96, 12288, 96, 2048);
  m.tied_embeddings = true;
  return m;
}

ParallelPlan batch(int global_batch, Recompute rc = Recompute::None) {
  ParallelPlan p;
  p.global_batch = global_batch;
  p.recompute = rc;
  return p;
}

TEST(Flops, SixNTokensWithoutAttention) {
  // The GEMMs a token goes through hold every parameter except norms (and, for tied GPT-3, the
  // input embedding is the logits matrix, counted once), so without the attention term model
  // FLOPs = 6 * N * tokens to within the norms' share (~1e-5).
  const ModelConfig m = gpt3();
  const double tokens = 1536.0 * 2048;
  const double attention = 3.0 * m.layers * attention_core_forward_flops_per_token(m, 0) * tokens;
  const double f = model_flops_per_step(m, 1536) - attention;
  EXPECT_NEAR(f / (6.0 * m.total_params() * tokens), 1.0, 0.01);
  // Attention core: 12 * l * s * h per token in training (4*s*h forward per layer).
  EXPECT_DOUBLE_EQ(attention, 12.0 * 96 * 2048 * 12288 * tokens);
}

TEST(Flops, CausalHalvingConvention) {
  const ModelConfig m = gpt3();
  const double full = model_flops_per_step(m, 8), half = model_flops_per_step(m, 8, AttentionCount::CausalHalf);
  EXPECT_DOUBLE_EQ(full - half, 0.5 * 3.0 * m.layers * attention_core_forward_flops_per_token(m, 0) * 8 * 2048);
}

TEST(Flops, SlidingWindowLayersCountTheirWindow) {
  // Every 2nd layer attends the whole context, the others a window of s/4 keys: the attention
  // term of those layers is a quarter (Full count) or the causal mean of min(i + 1, w) keys.
  ModelConfig m = gpt3();
  const double full_layer = attention_core_forward_flops_per_token(m, 0);
  m.sliding_window = m.seq_len / 4;
  m.full_attention_every = 2;
  EXPECT_DOUBLE_EQ(attention_core_forward_flops_per_token(m, 0), full_layer / 4);
  EXPECT_DOUBLE_EQ(attention_core_forward_flops_per_token(m, 1), full_layer);
  const double s = m.seq_len, w = s / 4;
  EXPECT_DOUBLE_EQ(attention_core_forward_flops_per_token(m, 0, AttentionCount::CausalHalf),
                   full_layer / s * (w * (w + 1) / 2 + (s - w) * w) / s);
}

TEST(Flops, SparseAttentionCountsTopKKeysAndTheIndexer) {
  // DeepSeek Sparse Attention on a GPT shape: each query attends its top-k keys (as a window of k
  // would, by count), and the indexer scores the causal half of the context per token:
  // 2 x index_heads x index_head_dim FLOPs per scored key.
  ModelConfig m = gpt3();
  const double full_layer = attention_core_forward_flops_per_token(m, 0);
  const double dense_layer = layer_forward_flops_per_token(m, 0, AttentionCount::Full);
  m.sparse = {64, 128, m.seq_len / 4};
  EXPECT_DOUBLE_EQ(attention_core_forward_flops_per_token(m, 0), full_layer / 4);
  const double projections = m.indexer_params();  // its q, k and head-weight GEMMs
  const double indexer = 2.0 * 64 * 128 * 0.5 * m.seq_len;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m, 0, AttentionCount::Full),
                   dense_layer - full_layer * 3 / 4 + 2.0 * projections + indexer);
}

TEST(Flops, Sc21FormulaIsFullRecomputationHardwareFlops) {
  // 96Bslh^2(1 + s/6h + V/16lh) = 4 passes x l x (24bsh^2 + 4bs^2h) + 3 passes x 2bshV: our
  // hardware FLOPs with full recomputation for a GPT (MHA, ffn = 4h) model, exactly.
  const ModelConfig m = gpt3();
  const double sc21 = megatron_sc21_flops(1536, 2048, 96, 12288, 51200);
  EXPECT_NEAR(hardware_flops_per_step(m, batch(1536, Recompute::Full)) / sc21, 1.0, 1e-12);
  // SC'21 section 5.1: 300B tokens of GPT-3 175B on 1024 A100s at 140 TFLOP/s per GPU take about
  // 34 days (their eq. 4, 8TP/(nX), approximates F/(Bs) by 8P).
  const double iterations = 300e9 / (1536.0 * 2048);
  const double days = iterations * sc21 / (1024 * 140e12) / 86400;
  EXPECT_NEAR(days / 34.0, 1.0, 0.05);
  EXPECT_NEAR(sc21 / (1536.0 * 2048) / (8 * 175e9), 1.0, 0.05);
}

TEST(Flops, RecomputationAddsForwardWork) {
  const ModelConfig m = gpt3();
  const double tokens = 64.0 * 2048;
  const double model = model_flops_per_step(m, 64);
  EXPECT_DOUBLE_EQ(hardware_flops_per_step(m, batch(64)), model);
  // Selective: the attention core forward once more, 4*s*h per token and layer.
  EXPECT_NEAR(hardware_flops_per_step(m, batch(64, Recompute::Selective)) - model, 4.0 * 2048 * 12288 * 96 * tokens,
              1e-9 * model);
  // Full: every layer's forward once more = (model - logits) / 3.
  const double logits = 3.0 * logits_forward_flops_per_token(m) * tokens;
  EXPECT_NEAR(hardware_flops_per_step(m, batch(64, Recompute::Full)) - model, (model - logits) / 3.0, 1e-9 * model);
}

TEST(Flops, MoeCountsRoutedExpertsOnly) {
  // Mixtral-style: per token 2 of 8 experts; model FLOPs follow the active, not total, weights.
  ModelConfig m = gpt3();
  m.layers = 4;
  m.mlp = Mlp::SwiGlu;
  m.tied_embeddings = false;
  ModelConfig moe = m;
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = m.ffn_hidden;
  const double dense_mlp = 3.0 * 2 * 3 * 12288.0 * m.ffn_hidden * m.layers;  // 3 passes, 2 FLOPs, 3 matrices
  EXPECT_NEAR((model_flops_per_step(moe, 1) - model_flops_per_step(m, 1)) / 2048, dense_mlp, 1e-6 * dense_mlp);
}

}  // namespace
}  // namespace stacksim::workload
