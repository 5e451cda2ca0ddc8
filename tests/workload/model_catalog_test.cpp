// The bundled model catalogue: its entries against the Hugging Face configs of the same models and
// the published parameter counts, name matching, and `model.preset` in scenarios.
#include <gtest/gtest.h>

#include <string>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "models/workload/model_catalog.hpp"
#include "models/workload/model_config.hpp"

namespace stacksim::workload {
namespace {

const ModelCatalog& catalog() { return bundled_models(); }

const ModelConfig& entry(const std::string& name) {
  const CatalogModel* e = catalog().find(name);
  if (!e) throw std::runtime_error("not in the catalogue: " + name);
  return e->config;
}

ModelConfig from_yaml(const std::string& text) {
  const config::Node root = config::Node::load_string(text, "scenario.yaml");
  return parse_model(root["model"], ".");
}

std::string error_of(const std::string& text) {
  try {
    from_yaml(text);
  } catch (const config::InputError& e) {
    return e.what();
  }
  return "";
}

// Every field the replay reads, entry against a config.json of the same model.
void expect_same_shape(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.mlp, b.mlp);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.attention_kind, b.attention_kind);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.full_attention_every, b.full_attention_every);
  EXPECT_EQ(a.mla.q_lora_rank, b.mla.q_lora_rank);
  EXPECT_EQ(a.mla.kv_lora_rank, b.mla.kv_lora_rank);
  EXPECT_EQ(a.sparse.index_heads, b.sparse.index_heads);
  EXPECT_EQ(a.sparse.index_head_dim, b.sparse.index_head_dim);
  EXPECT_EQ(a.sparse.topk_tokens, b.sparse.topk_tokens);
  EXPECT_EQ(a.moe.experts, b.moe.experts);
  EXPECT_EQ(a.moe.top_k, b.moe.top_k);
  EXPECT_EQ(a.moe.shared_experts, b.moe.shared_experts);
  EXPECT_EQ(a.moe.expert_ffn_hidden, b.moe.expert_ffn_hidden);
  EXPECT_EQ(a.moe.first_dense_layers, b.moe.first_dense_layers);
  EXPECT_EQ(a.moe.groups, b.moe.groups);
  EXPECT_EQ(a.moe.groups_per_token, b.moe.groups_per_token);
  EXPECT_DOUBLE_EQ(a.total_params(), b.total_params());
}

std::string hf(const std::string& file) { return std::string(STACKSIM_TEST_DATA_DIR) + "/hf/" + file; }

TEST(ModelCatalog, EntriesMatchTheHuggingFaceConfigs) {
  // The configs in tests/data/hf are copies of the models' own config.json files; the catalogue
  // was typed separately. (Qwen2-7B's config is the Qwen2.5-7B shape; DeepSeek-V3's MTP layer is
  // a training option the catalogue leaves out.)
  expect_same_shape(entry("Llama 3 8B"), parse_hf_config(hf("llama-3-8b.json")));
  expect_same_shape(entry("Mixtral 8x7B"), parse_hf_config(hf("mixtral-8x7b.json")));
  expect_same_shape(entry("Qwen2 7B"), parse_hf_config(hf("qwen2-7b.json")));
  expect_same_shape(entry("GPT-OSS 120B"), parse_hf_config(hf("gpt-oss-120b.json")));
  expect_same_shape(entry("DeepSeek-V3"), parse_hf_config(hf("deepseek-v3.json")));
  // deepseek-v3.2-exp.json: V3's config.json with the three index_* fields V3.2-Exp's adds.
  expect_same_shape(entry("DeepSeek-V3.2"), parse_hf_config(hf("deepseek-v3.2-exp.json")));
}

TEST(ModelCatalog, ParameterCountsAreThePublishedOnes) {
  struct Published {
    const char* name;
    double total, active;  // parameters as the model cards and papers give them (active: MoE)
    double tolerance;
    bool active_without_embeddings = false;  // the card's active count leaves out embedding and head
  };
  // Llama 3 paper Table 3 / model cards; Mixtral paper (46.7B, 12.9B active); DeepSeek-V3 report
  // (671B, 37B active); Qwen3 report; GPT-3 Table 2.1; BLOOM (176B); Nemotron-4 340B report;
  // DBRX (132B, 36B active); MT-NLG (530B); the Megatron-LM SC'21 Table 1 sizes; MPT-7B (6.7B);
  // Kimi K2 (1.04T, 32.6B active); GLM-4.5 (355B, 32B active; its MTP layer not counted here);
  // the Pythia README's table; Gemma and Gemma 2 reports (Table 2: embedding + non-embedding);
  // TinyLlama, InternLM2 (checkpoint counts); GPT-J's model card; DeepSeekMoE (16.4B, 2.8B active); Grok-1 (314B).
  const Published published[] = {
      {"Llama 3 8B", 8.03e9, 0, 0.01},
      {"Llama 3 70B", 70.6e9, 0, 0.01},
      {"Llama 3.1 405B", 405e9, 0, 0.01},
      {"Llama 2 70B", 69e9, 0, 0.01},
      {"LLaMA 65B", 65.2e9, 0, 0.01},
      {"Mixtral 8x7B", 46.7e9, 12.9e9, 0.01},
      {"Mixtral 8x22B", 141e9, 39e9, 0.01},
      {"DeepSeek-V3", 671e9, 37e9, 0.02},
      {"DeepSeek-V2", 236e9, 21e9, 0.02},
      {"Qwen3 235B-A22B", 235e9, 22e9, 0.02},
      {"Qwen3 30B-A3B", 30.5e9, 3.3e9, 0.03},
      {"GPT-3 175B", 175e9, 0, 0.01},
      {"GPT-J 6B", 6.053e9, 0, 0.01},
      {"BLOOM 176B", 176e9, 0, 0.01},
      {"Nemotron-4 340B", 341e9, 0, 0.01},
      {"DBRX", 132e9, 36e9, 0.02},
      {"MT-NLG 530B", 530e9, 0, 0.01},
      {"GPT 1T", 1008e9, 0, 0.01},
      {"GPT 39B", 39.1e9, 0, 0.02},
      {"MPT-7b", 6.7e9, 0, 0.01},
      {"BloombergGPT", 50.6e9, 0, 0.01},
      {"Kimi K2", 1.04e12, 32.6e9, 0.02},
      {"GLM-4.5", 355e9, 32e9, 0.02, true},
      {"Pythia 12B", 11.846e9, 0, 0.01},
      {"Pythia 1.4B", 1.415e9, 0, 0.01},
      {"Gemma 7B", 8.538e9, 0, 0.01},
      {"Gemma 2 27B", 27.227e9, 0, 0.01},
      {"TinyLlama 1.1B", 1.100e9, 0, 0.01},
      {"DeepSeekMoE 16B", 16.4e9, 2.8e9, 0.02},
      {"InternLM2 7B", 7.738e9, 0, 0.01},
      {"Grok-1", 314e9, 0, 0.01},
  };
  for (const auto& p : published) {
    const ModelConfig& m = entry(p.name);
    EXPECT_NEAR(m.total_params() / p.total, 1.0, p.tolerance) << p.name << ": " << m.total_params() / 1e9 << "B";
    const double active = m.active_params() - (p.active_without_embeddings ? m.embedding_params() : 0.0);
    if (p.active > 0) EXPECT_NEAR(active / p.active, 1.0, p.tolerance + 0.02) << p.name << ": " << active / 1e9 << "B";
  }
}

TEST(ModelCatalog, NamesMatchWhateverTheSpelling) {
  const CatalogModel* llama = catalog().find("Llama 3 8B");
  ASSERT_NE(llama, nullptr);
  for (const char* spelling :
       {"LLAMA3_8B", "Llama-3-8B", "llama3-8b", "meta-llama/Meta-Llama-3-8B", "Llama 3.1 8B", "Llama 3 8B (Table 4)"})
    EXPECT_EQ(catalog().find(spelling), llama) << spelling;
  EXPECT_EQ(catalog().find("Llama 3 80B"), nullptr);
  EXPECT_EQ(catalog().find("GPT-2 style 8B"), nullptr);
  EXPECT_NE(catalog().find("GPT3-175B"), catalog().find("GPT3-1.75B"));
  EXPECT_EQ(catalog().find("MT-NLG 530B"), catalog().find("GPT 530B"));
}

TEST(ModelPreset, TakesTheEntryAndTheKeysBesideIt) {
  const ModelConfig m = from_yaml("model: {preset: llama-3-70b, seq_len: 4096}\n");
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.seq_len, 4096);
  EXPECT_EQ(m.name, "Llama 3 70B");
  EXPECT_EQ(from_yaml("model: {preset: Llama 3 70B}\n").seq_len, 8192);  // the pretraining length
  // A head dimension that was hidden / heads follows new heads; a stated one stays.
  const ModelConfig narrow = from_yaml("model: {preset: Llama 3 8B, heads: 16, kv_heads: 4}\n");
  EXPECT_EQ(narrow.head_dim, 256);
  EXPECT_EQ(from_yaml("model: {preset: Qwen3 32B, heads: 32}\n").head_dim, 128);
  // MoE keys beside the preset override one field each.
  const ModelConfig mix = from_yaml("model: {preset: Mixtral 8x7B, seq_len: 4096, moe: {top_k: 1}}\n");
  EXPECT_EQ(mix.moe.experts, 8);
  EXPECT_EQ(mix.moe.top_k, 1);
}

TEST(ModelPreset, BadInputSaysWhatToChange) {
  const std::string unknown = error_of("model: {preset: Llama 3 71B}\n");
  EXPECT_NE(unknown.find("model.preset"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean 'Llama 3 70B'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("stacksim catalog models"), std::string::npos) << unknown;
  const std::string no_seq = error_of("model: {preset: Mistral 7B}\n");
  EXPECT_NE(no_seq.find("model.seq_len"), std::string::npos) << no_seq;
  EXPECT_NE(no_seq.find("beside preset"), std::string::npos) << no_seq;
  EXPECT_NE(error_of("model: {preset: Llama 3 8B, hf_config: x.json}\n").find("keep one"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::workload
