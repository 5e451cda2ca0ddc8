// Model descriptions: HuggingFace config parsing (parameter counts against the published model
// sizes), scenario YAML parsing and its input errors.
#include <gtest/gtest.h>

#include <string>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "models/workload/model_catalog.hpp"
#include "models/workload/model_config.hpp"

namespace stacksim::workload {
namespace {

std::string hf(const std::string& file) { return std::string(STACKSIM_TEST_DATA_DIR) + "/hf/" + file; }

ModelConfig from_yaml(const std::string& text) {
  const config::Node root = config::Node::load_string(text, "scenario.yaml");
  return parse_model(root["model"], std::string(STACKSIM_TEST_DATA_DIR));
}

// The message of the InputError `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const config::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, Llama3_8B) {
  const ModelConfig m = parse_hf_config(hf("llama-3-8b.json"));
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.mlp, Mlp::SwiGlu);
  EXPECT_EQ(m.norm, Norm::RmsNorm);
  EXPECT_EQ(m.attention_kind, AttentionKind::Gqa);
  EXPECT_FALSE(m.is_moe());
  // Closed form: 2*V*h (untied) + h (final norm) + L*(h*(h + 2*1024) + h*h + 3*h*f + 2h)
  // = 8,030,261,248, the published "8B" (8.03B on the model card).
  const double h = 4096, f = 14336, V = 128256, L = 32;
  const double expected = 2 * V * h + h + L * (h * (h + 2 * 1024) + h * h + 3 * h * f + 2 * h);
  EXPECT_DOUBLE_EQ(m.total_params(), expected);
  EXPECT_NEAR(m.total_params() / 8.03e9, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(m.active_params(), m.total_params());
}

TEST(HfConfig, Mixtral8x7B) {
  const ModelConfig m = parse_hf_config(hf("mixtral-8x7b.json"));
  EXPECT_EQ(m.moe.experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.moe.expert_ffn_hidden, 14336);
  EXPECT_TRUE(m.is_moe_layer(0));
  EXPECT_NEAR(m.total_params() / 46.7e9, 1.0, 0.02);   // Mistral AI: 46.7B total
  EXPECT_NEAR(m.active_params() / 12.9e9, 1.0, 0.02);  // 12.9B active per token
}

TEST(HfConfig, Qwen2_7B) {
  const ModelConfig m = parse_hf_config(hf("qwen2-7b.json"));
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(m.kv_heads, 4);
  EXPECT_NEAR(m.total_params() / 7.6e9, 1.0, 0.02);  // Qwen2 report: 7.6B (7.62B)
  EXPECT_EQ(m.sliding_window, 0);                    // Qwen2 ships a window with use_sliding_window: false
}

TEST(HfConfig, GptOss120BAlternatesSlidingAndFullAttention) {
  // The shape fields of openai/gpt-oss-120b's config.json (Megatron-Bridge's GPTOSSProvider120B
  // has the same: 64 heads of 64 on hidden 2880, window 128, window_attn_skip_freq 2).
  const ModelConfig m = parse_hf_config(hf("gpt-oss-120b.json"));
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_EQ(m.full_attention_every, 2);
  EXPECT_EQ(m.attention_window(0), 128);               // layer 1 (1-based) slides
  EXPECT_EQ(m.attention_window(1), 0);                 // layer 2 attends the whole context
  EXPECT_NEAR(m.total_params() / 116.8e9, 1.0, 0.01);  // model card: 116.8B parameters
}

TEST(HfConfig, DeepSeekV3) {
  const ModelConfig m = parse_hf_config(hf("deepseek-v3.json"));
  EXPECT_EQ(m.mtp_layers, 1);  // num_nextn_predict_layers; its parameters are not in total_params
  EXPECT_EQ(m.attention_kind, AttentionKind::Mla);
  EXPECT_EQ(m.head_dim, 128 + 64);
  EXPECT_EQ(m.v_head_dim(), 128);
  EXPECT_EQ(m.moe.experts, 256);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_EQ(m.moe.expert_ffn_hidden, 2048);
  EXPECT_FALSE(m.is_moe_layer(2));  // first_k_dense_replace = 3
  EXPECT_TRUE(m.is_moe_layer(3));
  EXPECT_EQ(m.moe.groups, 8);  // n_group / topk_group: a token's experts in 4 of 8 groups
  EXPECT_EQ(m.moe.groups_per_token, 4);
  // DeepSeek-V3 report: 671B total (without the 14B multi-token-prediction module), 37B active.
  EXPECT_NEAR(m.total_params() / 671e9, 1.0, 0.02);
  EXPECT_NEAR(m.active_params() / 37e9, 1.0, 0.03);
}

TEST(HfConfig, DeepSeekV32AddsTheSparseAttentionIndexer) {
  // deepseek-ai/DeepSeek-V3.2-Exp's config.json is V3's plus index_n_heads, index_head_dim and
  // index_topk (the test file: V3's copy with those three added); the catalogue says the same.
  const ModelConfig m = parse_hf_config(hf("deepseek-v3.2-exp.json"));
  EXPECT_TRUE(m.is_sparse_attention());
  EXPECT_EQ(m.sparse.index_heads, 64);
  EXPECT_EQ(m.sparse.index_head_dim, 128);
  EXPECT_EQ(m.sparse.topk_tokens, 2048);
  EXPECT_DOUBLE_EQ(m.total_params(), bundled_models().find("DeepSeek-V3.2")->config.total_params());
  // V3.2 report: the same 671B main model as V3.1 plus the indexer (under 1B).
  EXPECT_NEAR(m.total_params() / 672e9, 1.0, 0.01);
}

TEST(HfConfig, MissingFileAndFieldAreInputErrors) {
  EXPECT_NE(error_of([] { parse_hf_config(hf("no-such.json")); }).find("check the path"), std::string::npos);
  const ModelConfig ok = parse_hf_config(hf("llama-3-8b.json"));
  EXPECT_GT(ok.vocab, 0);
}

TEST(ModelYaml, HfConfigWithOverrides) {
  const ModelConfig m = from_yaml("model: {hf_config: hf/llama-3-8b.json, seq_len: 4096, name: l3}\n");
  EXPECT_EQ(m.seq_len, 4096);
  EXPECT_EQ(m.name, "l3");
  EXPECT_EQ(m.hidden, 4096);
  const std::string e = error_of([] { from_yaml("model: {hf_config: hf/missing.json}\n"); });
  EXPECT_NE(e.find("hf_config"), std::string::npos);
}

TEST(ModelYaml, Gpt3Defaults) {
  const ModelConfig m =
      from_yaml("model: {layers: 96, hidden: 12288, heads: 96, vocab: 51200, seq_len: 2048, tied_embeddings: true}\n");
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.kv_heads, 96);
  EXPECT_EQ(m.ffn_hidden, 4 * 12288);
  EXPECT_EQ(m.mlp, Mlp::Gelu);
  EXPECT_EQ(m.attention_kind, AttentionKind::Mha);
  // 12*L*h^2 (attention 4h^2 + MLP 8h^2) + V*h = 174.6B + 0.63B: GPT-3's "175B".
  EXPECT_NEAR(m.total_params() / 175e9, 1.0, 0.01);
}

TEST(ModelYaml, MoeAndMla) {
  const ModelConfig m = from_yaml(
      "model:\n  layers: 4\n  hidden: 1024\n  heads: 8\n  vocab: 1000\n  seq_len: 128\n  mlp: swiglu\n"
      "  mla: {q_lora_rank: 256, kv_lora_rank: 128, qk_nope_head_dim: 64, qk_rope_head_dim: 32, v_head_dim: 64}\n"
      "  moe: {experts: 16, top_k: 4, shared_experts: 2, expert_ffn_hidden: 512, first_dense_layers: 1,"
      " layer_freq: 2, capacity_factor: 1.05}\n");
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.head_dim, 96);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(1));  // odd layer with layer_freq 2
  EXPECT_TRUE(m.is_moe_layer(2));
  EXPECT_DOUBLE_EQ(m.moe.load_factor(), 1.05);  // min(imbalance 1.1, capacity 1.05)
  // MLA weights: h*q_lora + q_lora*heads*96 + h*(kv_lora + rope) + kv_lora*heads*(64 + 64) + heads*64*h.
  const double h = 1024;
  EXPECT_DOUBLE_EQ(m.attention_gemm_params(),
                   h * 256 + 256.0 * 8 * 96 + h * (128 + 32) + 128.0 * 8 * 128 + 8.0 * 64 * h);
}

TEST(ModelYaml, InputErrorsNameKeyAndFix) {
  const std::string no_head_dim =
      error_of([] { from_yaml("model: {layers: 2, hidden: 1000, heads: 24, vocab: 10, seq_len: 8}\n"); });
  EXPECT_NE(no_head_dim.find("head_dim"), std::string::npos) << no_head_dim;
  EXPECT_NE(no_head_dim.find("scenario.yaml"), std::string::npos) << no_head_dim;
  const std::string kv =
      error_of([] { from_yaml("model: {layers: 2, hidden: 1024, heads: 16, kv_heads: 5, vocab: 10, seq_len: 8}\n"); });
  EXPECT_NE(kv.find("kv_heads"), std::string::npos) << kv;
  EXPECT_NE(kv.find("Fix:"), std::string::npos) << kv;
  const std::string negative =
      error_of([] { from_yaml("model: {layers: 2, hidden: -1, heads: 16, vocab: 10, seq_len: 8}\n"); });
  EXPECT_NE(negative.find("hidden"), std::string::npos) << negative;
  const std::string typo =
      error_of([] { from_yaml("model: {layer: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8}\n"); });
  EXPECT_NE(typo.find("layers"), std::string::npos) << typo;  // nearest-key suggestion
  const std::string top_k = error_of([] {
    from_yaml("model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, moe: {experts: 4, top_k: 5}}\n");
  });
  EXPECT_NE(top_k.find("top_k"), std::string::npos) << top_k;
  const std::string groups = error_of([] {
    from_yaml(
        "model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, moe: {experts: 16, top_k: 2,"
        " groups: 3, groups_per_token: 1}}\n");
  });
  EXPECT_NE(groups.find("moe.groups"), std::string::npos) << groups;
  const std::string per_token = error_of([] {
    from_yaml(
        "model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, moe: {experts: 16, top_k: 2,"
        " groups: 4, groups_per_token: 5}}\n");
  });
  EXPECT_NE(per_token.find("moe.groups_per_token"), std::string::npos) << per_token;
  const std::string every = error_of([] {
    from_yaml("model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, full_attention_every: 2}\n");
  });
  EXPECT_NE(every.find("add sliding_window"), std::string::npos) << every;
  const std::string unfused = error_of([] {
    from_yaml(
        "model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, sliding_window: 4, attention: unfused}\n");
  });
  EXPECT_NE(unfused.find("needs a fused kernel"), std::string::npos) << unfused;
  // A sparse_attention section with a zero size would silently be dense attention: refused.
  const std::string sparse = error_of([] {
    from_yaml(
        "model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8,"
        " sparse_attention: {index_heads: 0, index_head_dim: 128, topk_tokens: 2048}}\n");
  });
  EXPECT_NE(sparse.find("sparse_attention.index_heads"), std::string::npos) << sparse;
  const std::string sparse_missing = error_of([] {
    from_yaml(
        "model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8,"
        " sparse_attention: {index_heads: 4, index_head_dim: 128}}\n");
  });
  EXPECT_NE(sparse_missing.find("topk_tokens"), std::string::npos) << sparse_missing;
  const std::string mtp = error_of(
      [] { from_yaml("model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, mtp_layers: 17}\n"); });
  EXPECT_NE(mtp.find("mtp_layers"), std::string::npos) << mtp;
  const std::string experts = error_of([] {
    from_yaml("model: {layers: 2, hidden: 1024, heads: 16, vocab: 10, seq_len: 8, moe: {experts: 100000, top_k: 2}}\n");
  });
  EXPECT_NE(experts.find("moe.experts"), std::string::npos) << experts;
}

TEST(ModelYaml, SlidingWindowEveryLayerOrAllButEveryNth) {
  const ModelConfig mistral =
      from_yaml("model: {layers: 4, hidden: 1024, heads: 16, vocab: 10, seq_len: 8192, sliding_window: 4096}\n");
  for (int l = 0; l < 4; ++l) EXPECT_EQ(mistral.attention_window(l), 4096);
  const ModelConfig gemma3 = from_yaml(
      "model: {layers: 12, hidden: 1024, heads: 16, vocab: 10, seq_len: 8192, sliding_window: 1024, "
      "full_attention_every: 6}\n");
  EXPECT_EQ(gemma3.attention_window(4), 1024);
  EXPECT_EQ(gemma3.attention_window(5), 0);
  EXPECT_EQ(gemma3.attention_window(11), 0);
}

}  // namespace
}  // namespace stacksim::workload
