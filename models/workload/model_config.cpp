#include "models/workload/model_config.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace stacksim::workload {

double ModelConfig::attention_params() const {
  return static_cast<double>(hidden) * (q_width() + 2 * kv_width()) + static_cast<double>(q_width()) * hidden;
}

double ModelConfig::dense_mlp_params() const {
  return (mlp == Mlp::SwiGlu ? 3.0 : 2.0) * hidden * ffn_hidden;
}

double ModelConfig::expert_params() const {
  return (mlp == Mlp::SwiGlu ? 3.0 : 2.0) * hidden * moe.expert_ffn_hidden;
}

double ModelConfig::layer_params(int layer) const {
  double p = attention_params() + 2.0 * hidden;  // + two norms
  if (is_moe_layer(layer))
    p += expert_params() * (moe.experts + moe.shared_experts) + static_cast<double>(hidden) * moe.experts;
  else
    p += dense_mlp_params();
  return p;
}

double ModelConfig::embedding_params() const {
  return static_cast<double>(vocab) * hidden * (tied_embeddings ? 1 : 2);
}

double ModelConfig::total_params() const {
  double p = embedding_params() + hidden;
  for (int l = 0; l < layers; ++l) p += layer_params(l);
  return p;
}

double ModelConfig::active_params() const {
  double p = embedding_params() + hidden;
  for (int l = 0; l < layers; ++l) {
    p += attention_params() + 2.0 * hidden;
    p += is_moe_layer(l) ? expert_params() * (moe.top_k + moe.shared_experts) : dense_mlp_params();
  }
  return p;
}

void check_model(const ModelConfig& m, const config::Node& n) {
  auto positive = [&](const char* key, int64_t v) {
    if (v <= 0) n.fail(key, "must be a positive integer, got " + std::to_string(v), "give the model's " + std::string(key));
  };
  positive("layers", m.layers);
  positive("hidden", m.hidden);
  positive("heads", m.heads);
  positive("kv_heads", m.kv_heads);
  positive("head_dim", m.head_dim);
  positive("ffn_hidden", m.ffn_hidden);
  positive("vocab", m.vocab);
  positive("seq_len", m.seq_len);
  if (m.heads % m.kv_heads != 0)
    n.fail("kv_heads", "heads (" + std::to_string(m.heads) + ") must be a multiple of kv_heads (" +
                           std::to_string(m.kv_heads) + ")", "use a kv_heads that divides heads");
  if (m.is_moe()) {
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts)
      n.fail("moe", "top_k must be between 1 and the number of experts", "fix moe.top_k");
    if (m.moe.expert_ffn_hidden <= 0) n.fail("moe", "expert_ffn_hidden must be positive", "set moe.expert_ffn_hidden");
    if (m.moe.imbalance < 1.0) n.fail("moe", "imbalance must be >= 1 (busiest rank over the mean)", "use e.g. 1.1");
  }
}

ModelConfig parse_model(const config::Node& n, const std::string& base_dir) {
  n.require_map();
  n.check_keys({"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len",
                "mlp", "norm", "tied_embeddings", "moe", "hf_config", "attention"});
  ModelConfig m;
  if (n.has("hf_config")) {
    std::filesystem::path p = n.required_string("hf_config");
    if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
    try {
      m = parse_hf_config(p.string());
    } catch (const config::InputError& e) {
      n.fail("hf_config", e.reason(), e.fix());
    }
  }
  auto int_or = [&](const char* key, int64_t current) -> int64_t {
    return n.has(key) ? n.required_int(key) : current;
  };
  m.name = n.string_or("name", m.name);
  m.layers = static_cast<int>(int_or("layers", m.layers));
  m.hidden = int_or("hidden", m.hidden);
  m.heads = int_or("heads", m.heads);
  m.kv_heads = int_or("kv_heads", m.kv_heads ? m.kv_heads : m.heads);
  if (m.heads > 0 && m.hidden > 0 && !n.has("head_dim") && m.head_dim == 0) {
    if (m.hidden % m.heads != 0)
      n.fail("heads", "hidden (" + std::to_string(m.hidden) + ") is not divisible by heads", "set head_dim explicitly");
    m.head_dim = m.hidden / m.heads;
  }
  m.head_dim = int_or("head_dim", m.head_dim);
  m.ffn_hidden = int_or("ffn_hidden", m.ffn_hidden ? m.ffn_hidden : 4 * m.hidden);
  m.vocab = int_or("vocab", m.vocab);
  m.seq_len = int_or("seq_len", m.seq_len);
  if (n.has("mlp")) {
    const std::string s = n.required_string("mlp");
    if (s == "gelu") m.mlp = Mlp::Gelu;
    else if (s == "swiglu") m.mlp = Mlp::SwiGlu;
    else n.fail("mlp", "unknown MLP '" + s + "'", "use gelu or swiglu");
  }
  if (n.has("attention")) {
    const std::string s = n.required_string("attention");
    if (s == "flash") m.attention = AttentionImpl::Flash;
    else if (s == "flash2") m.attention = AttentionImpl::Flash2;
    else if (s == "unfused") m.attention = AttentionImpl::Unfused;
    else n.fail("attention", "unknown attention implementation '" + s + "'", "use flash, flash2 or unfused");
  }
  if (n.has("norm")) {
    const std::string s = n.required_string("norm");
    if (s != "layernorm" && s != "rmsnorm") n.fail("norm", "unknown norm '" + s + "'", "use layernorm or rmsnorm");
  }
  m.tied_embeddings = n.bool_or("tied_embeddings", m.tied_embeddings);
  if (n.has("moe")) {
    const config::Node e = n["moe"];
    e.check_keys({"experts", "top_k", "shared_experts", "expert_ffn_hidden", "first_dense_layers", "imbalance"});
    m.moe.experts = static_cast<int>(e.required_int("experts"));
    m.moe.top_k = static_cast<int>(e.required_int("top_k"));
    m.moe.shared_experts = static_cast<int>(e.optional_int("shared_experts").value_or(0));
    m.moe.expert_ffn_hidden = e.optional_int("expert_ffn_hidden").value_or(m.ffn_hidden);
    m.moe.first_dense_layers = static_cast<int>(e.optional_int("first_dense_layers").value_or(0));
    m.moe.imbalance = e.optional_number("imbalance").value_or(1.1);
  }
  check_model(m, n);
  return m;
}

ModelConfig parse_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw config::InputError(path, 0, "", "cannot open the HuggingFace config", "check the path");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw config::InputError(path, 0, "", std::string("malformed JSON: ") + e.what(), "fix the JSON");
  }
  auto get = [&](std::initializer_list<const char*> keys, int64_t fallback, bool required) -> int64_t {
    for (const char* k : keys)
      if (j.contains(k) && j[k].is_number()) return j[k].get<int64_t>();
    if (required)
      throw config::InputError(path, 0, *keys.begin(), "missing", "a HuggingFace config needs this field");
    return fallback;
  };
  ModelConfig m;
  m.name = j.value("_name_or_path", std::filesystem::path(path).stem().string());
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty())
    m.name = j["architectures"][0].get<std::string>();
  m.hidden = get({"hidden_size", "d_model", "n_embd"}, 0, true);
  m.layers = static_cast<int>(get({"num_hidden_layers", "n_layer", "num_layers"}, 0, true));
  m.heads = get({"num_attention_heads", "n_head"}, 0, true);
  m.kv_heads = get({"num_key_value_heads"}, m.heads, false);
  m.head_dim = get({"head_dim"}, m.hidden / m.heads, false);
  if (j.contains("v_head_dim") && j.contains("qk_nope_head_dim"))  // DeepSeek MLA: q/k/v width per head
    m.head_dim = j["v_head_dim"].get<int64_t>();
  m.ffn_hidden = get({"intermediate_size", "ffn_dim", "n_inner"}, 4 * m.hidden, false);
  m.vocab = get({"vocab_size"}, 0, true);
  m.seq_len = get({"max_position_embeddings", "n_positions", "seq_length"}, 4096, false);
  m.tied_embeddings = j.value("tie_word_embeddings", false);
  const std::string act = j.value("hidden_act", std::string("silu"));
  m.mlp = act == "silu" || act == "swiglu" ? Mlp::SwiGlu : Mlp::Gelu;
  const int64_t experts = get({"num_local_experts", "n_routed_experts", "num_experts"}, 0, false);
  if (experts > 0) {
    m.moe.experts = static_cast<int>(experts);
    m.moe.top_k = static_cast<int>(get({"num_experts_per_tok", "moe_top_k"}, 1, false));
    m.moe.shared_experts = static_cast<int>(get({"n_shared_experts"}, 0, false));
    m.moe.expert_ffn_hidden = get({"moe_intermediate_size"}, m.ffn_hidden, false);
    m.moe.first_dense_layers = static_cast<int>(get({"first_k_dense_replace"}, 0, false));
  }
  return m;
}

}  // namespace stacksim::workload
