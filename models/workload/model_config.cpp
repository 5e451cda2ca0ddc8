#include "models/workload/model_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "config/schema.hpp"
#include "config/yaml.hpp"
#include "models/workload/model_catalog.hpp"

namespace stacksim::workload {
namespace {

// Reports one problem; must throw (config::InputError).
using Fail = std::function<void(const std::string& key, const std::string& reason, const std::string& fix)>;

void validate(const ModelConfig& m, const Fail& fail) {
  auto positive = [&](const char* key, int64_t v) {
    if (v <= 0)
      fail(key, "must be a positive integer, got " + std::to_string(v), std::string("give the model's ") + key);
  };
  positive("layers", m.layers);
  positive("hidden", m.hidden);
  positive("heads", m.heads);
  positive("kv_heads", m.kv_heads);
  positive("head_dim", m.head_dim);
  positive("ffn_hidden", m.ffn_hidden);
  positive("vocab", m.vocab);
  positive("seq_len", m.seq_len);
  // Sizes far beyond any real model would overflow the op shapes: refuse them plainly.
  auto at_most = [&](const char* key, int64_t v, int64_t limit) {
    if (v > limit)
      fail(key, "is " + std::to_string(v) + ", beyond the supported " + std::to_string(limit),
           std::string("check the model's ") + key);
  };
  at_most("layers", m.layers, 10'000);
  at_most("hidden", m.hidden, 1 << 20);
  at_most("heads", m.heads, 1 << 16);
  at_most("ffn_hidden", m.ffn_hidden, 1 << 24);
  at_most("vocab", m.vocab, 100'000'000);
  at_most("seq_len", m.seq_len, 100'000'000);
  if (m.mtp_layers < 0 || m.mtp_layers > 16)
    fail("mtp_layers", "must be between 0 and 16, got " + std::to_string(m.mtp_layers),
         "give the multi-token-prediction depth (DeepSeek-V3: 1), or 0");
  if (m.sliding_window < 0) fail("sliding_window", "must be >= 0", "give the window in tokens, or 0 for none");
  if (m.full_attention_every < 0) fail("full_attention_every", "must be >= 0", "use N for every Nth layer, or 0");
  if (m.full_attention_every > 0 && m.sliding_window == 0)
    fail("full_attention_every", "says which layers skip the sliding window, but sliding_window is not set",
         "add sliding_window: <tokens>, or drop full_attention_every");
  if (m.sliding_window > 0 && m.attention == AttentionImpl::Unfused)
    fail("sliding_window", "unfused attention computes the whole score matrix; a window needs a fused kernel",
         "use attention: flash (or flash2), or drop sliding_window");
  if (m.heads % m.kv_heads != 0)
    fail("kv_heads",
         "heads (" + std::to_string(m.heads) + ") must be a multiple of kv_heads (" + std::to_string(m.kv_heads) + ")",
         "use a kv_heads that divides heads (kv_heads = heads is plain multi-head attention)");
  if (m.is_mla()) {
    positive("mla.kv_lora_rank", m.mla.kv_lora_rank);
    positive("mla.qk_nope_head_dim", m.mla.qk_nope_head_dim);
    positive("mla.qk_rope_head_dim", m.mla.qk_rope_head_dim);
    positive("mla.v_head_dim", m.mla.v_head_dim);
    if (m.mla.q_lora_rank < 0) fail("mla.q_lora_rank", "must be >= 0", "use 0 for a full-rank Q projection");
  }
  // A sparse_attention section needs all three sizes (a zero would silently mean dense attention).
  if (m.sparse.index_heads != 0 || m.sparse.index_head_dim != 0 || m.sparse.topk_tokens != 0) {
    positive("sparse_attention.index_heads", m.sparse.index_heads);
    positive("sparse_attention.index_head_dim", m.sparse.index_head_dim);
    positive("sparse_attention.topk_tokens", m.sparse.topk_tokens);
    at_most("sparse_attention.index_heads", m.sparse.index_heads, 1 << 16);
    if (m.sliding_window > 0)
      fail("sparse_attention", "a model has either a sliding window or sparse attention, not both",
           "drop sliding_window or sparse_attention");
    if (m.attention == AttentionImpl::Unfused)
      fail("sparse_attention", "unfused attention computes the whole score matrix; top-k needs a fused kernel",
           "use attention: flash (or flash2), or drop sparse_attention");
  }
  if (m.is_moe()) {
    at_most("moe.experts", m.moe.experts, 1 << 16);
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts)
      fail("moe.top_k",
           "top_k (" + std::to_string(m.moe.top_k) + ") must be between 1 and the number of experts (" +
               std::to_string(m.moe.experts) + ")",
           "fix moe.top_k");
    if (m.moe.expert_ffn_hidden <= 0)
      fail("moe.expert_ffn_hidden", "must be positive", "set moe.expert_ffn_hidden (the routed expert's FFN width)");
    if (m.moe.shared_experts < 0) fail("moe.shared_experts", "must be >= 0", "use 0 for no shared expert");
    if (m.moe.first_dense_layers < 0 || m.moe.first_dense_layers >= m.layers)
      fail("moe.first_dense_layers", "must be in [0, layers)", "use the number of leading dense layers");
    if (m.moe.layer_freq < 1) fail("moe.layer_freq", "must be >= 1", "use 1 for MoE in every layer");
    if (m.moe.imbalance < 1.0)
      fail("moe.imbalance", "must be >= 1 (tokens of the busiest rank over the mean)", "use e.g. 1.1");
    // The busiest rank gets at most every token: experts / top_k times the mean.
    const double most = static_cast<double>(m.moe.experts) / m.moe.top_k;
    if (m.moe.imbalance > most)
      fail("moe.imbalance", "is above " + std::to_string(most) + ", every token on one expert's rank",
           "use e.g. 1.1 (tokens of the busiest rank over the mean)");
    if (m.moe.capacity_factor < 0) fail("moe.capacity_factor", "must be >= 0", "use 0 for dropless routing");
    if (m.moe.groups < 0 || (m.moe.groups > 0 && m.moe.experts % m.moe.groups != 0))
      fail("moe.groups", "must divide the experts (" + std::to_string(m.moe.experts) + ") into equal groups",
           "use a divisor of the experts, or 0 for unrestricted routing");
    if (m.moe.groups_per_token < 0 || m.moe.groups_per_token > m.moe.groups ||
        (m.moe.groups > 0 && m.moe.groups_per_token == 0))
      fail("moe.groups_per_token", "must be between 1 and moe.groups (" + std::to_string(m.moe.groups) + ")",
           "set the groups a token's experts may come from (DeepSeek-V3: 4 of 8), or drop moe.groups");
  }
}

Mlp parse_mlp(const config::Node& n) {
  const std::string s = n.required_string("mlp");
  if (s == "gelu") return Mlp::Gelu;
  if (s == "swiglu") return Mlp::SwiGlu;
  n.fail("mlp", "unknown MLP '" + s + "'", "use gelu or swiglu");
}

Norm parse_norm(const config::Node& n) {
  const std::string s = n.required_string("norm");
  if (s == "layernorm") return Norm::LayerNorm;
  if (s == "rmsnorm") return Norm::RmsNorm;
  n.fail("norm", "unknown norm '" + s + "'", "use layernorm or rmsnorm");
}

}  // namespace

double MoeConfig::load_factor() const { return capacity_factor > 0 ? std::min(imbalance, capacity_factor) : imbalance; }

double ModelConfig::attention_gemm_params() const {
  const double h = static_cast<double>(hidden);
  if (is_mla()) {
    const double qk = static_cast<double>(heads) * head_dim;
    const double q = mla.q_lora_rank > 0 ? h * mla.q_lora_rank + static_cast<double>(mla.q_lora_rank) * qk : h * qk;
    const double kv = h * (mla.kv_lora_rank + mla.qk_rope_head_dim) +
                      static_cast<double>(mla.kv_lora_rank) * heads * (mla.qk_nope_head_dim + mla.v_head_dim);
    return q + kv + static_cast<double>(attn_out_width()) * h + indexer_params();
  }
  return h * (q_width() + 2.0 * kv_width()) + static_cast<double>(attn_out_width()) * h + indexer_params();
}

double ModelConfig::indexer_params() const {
  if (!is_sparse_attention()) return 0;
  const double q_in = is_mla() && mla.q_lora_rank > 0 ? static_cast<double>(mla.q_lora_rank) : hidden;
  return q_in * sparse.index_heads * sparse.index_head_dim +
         static_cast<double>(hidden) * (sparse.index_head_dim + sparse.index_heads);
}

double ModelConfig::attention_params() const {
  double p = attention_gemm_params();
  if (is_mla()) p += static_cast<double>(mla.q_lora_rank) + mla.kv_lora_rank;  // latent RMSNorms
  if (qkv_bias) p += static_cast<double>(q_width()) + 2.0 * kv_width();
  return p;
}

double ModelConfig::dense_mlp_params() const { return static_cast<double>(mlp_gemms()) * hidden * ffn_hidden; }

double ModelConfig::expert_params() const { return static_cast<double>(mlp_gemms()) * hidden * moe.expert_ffn_hidden; }

double ModelConfig::layer_params(int layer) const {
  double p = attention_params() + 2.0 * norm_params();
  if (is_moe_layer(layer))
    p += expert_params() * (moe.experts + moe.shared_experts) + router_params();
  else
    p += dense_mlp_params();
  return p;
}

double ModelConfig::embedding_params() const { return static_cast<double>(vocab) * hidden * (tied_embeddings ? 1 : 2); }

double ModelConfig::total_params() const {
  double p = embedding_params() + norm_params();  // + the final norm
  for (int l = 0; l < layers; ++l) p += layer_params(l);
  return p;
}

double ModelConfig::active_params() const {
  double p = embedding_params() + norm_params();
  for (int l = 0; l < layers; ++l) {
    p += attention_params() + 2.0 * norm_params();
    p += is_moe_layer(l) ? expert_params() * (moe.top_k + moe.shared_experts) + router_params() : dense_mlp_params();
  }
  return p;
}

void check_model(const ModelConfig& m, const config::Node& n) {
  validate(m, [&](const std::string& key, const std::string& reason, const std::string& fix) {
    const auto dot = key.find('.');
    if (dot != std::string::npos && n.has(key.substr(0, dot)))
      n[key.substr(0, dot)].fail(key.substr(dot + 1), reason, fix);
    n.fail(key, reason, fix);
  });
}

ModelConfig parse_model(const config::Node& n) {
  return parse_model(n, std::filesystem::path(n.file()).parent_path().string());
}

ModelConfig parse_model(const config::Node& n, const std::string& base_dir) {
  n.require_map();
  n.check_keys(config::scenario_keys("model"));
  ModelConfig m;
  if (n.has("hf_config") && n.has("preset"))
    n.fail("preset", "both preset and hf_config name a base model", "keep one of the two");
  if (n.has("preset")) {
    m = bundled_models().get(n.required_string("preset"), n, "preset").config;
  } else if (n.has("hf_config")) {
    std::filesystem::path p = n.required_string("hf_config");
    if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
    try {
      m = parse_hf_config(p.string());
    } catch (const config::InputError& e) {
      n.fail("hf_config", p.string() + (e.key().empty() ? "" : " key '" + e.key() + "'") + ": " + e.reason(), e.fix());
    }
  }
  auto int_or = [&](const char* key, int64_t current) -> int64_t { return n.has(key) ? n.required_int(key) : current; };
  // A base model's head dimension that is hidden / heads follows overrides of either.
  const bool derived_head_dim = m.heads > 0 && m.head_dim * m.heads == m.hidden;
  m.name = n.string_or("name", m.name);
  m.layers = static_cast<int>(int_or("layers", m.layers));
  m.hidden = int_or("hidden", m.hidden);
  m.heads = int_or("heads", m.heads);
  m.kv_heads = int_or("kv_heads", m.kv_heads ? m.kv_heads : m.heads);
  if (n.has("head_dim")) {
    m.head_dim = n.required_int("head_dim");
  } else if ((m.head_dim == 0 || derived_head_dim) && m.heads > 0 && m.hidden > 0) {
    if (m.hidden % m.heads != 0)
      n.fail("heads",
             "hidden (" + std::to_string(m.hidden) + ") is not divisible by heads (" + std::to_string(m.heads) + ")",
             "set head_dim explicitly, or use a number of heads that divides hidden");
    m.head_dim = m.hidden / m.heads;
  }
  m.ffn_hidden = int_or("ffn_hidden", m.ffn_hidden ? m.ffn_hidden : 4 * m.hidden);
  m.vocab = int_or("vocab", m.vocab);
  m.seq_len = int_or("seq_len", m.seq_len);
  if (n.has("preset") && m.seq_len == 0)
    n.fail("seq_len", "missing: " + m.name + " has no published pretraining length in the catalogue",
           "add seq_len (tokens per sequence) beside preset");
  if (n.has("mlp")) m.mlp = parse_mlp(n);
  if (n.has("norm")) m.norm = parse_norm(n);
  m.tied_embeddings = n.bool_or("tied_embeddings", m.tied_embeddings);
  m.qkv_bias = n.bool_or("qkv_bias", m.qkv_bias);
  if (n.has("mla")) {
    const config::Node a = n["mla"];
    a.require_map();
    a.check_keys(config::scenario_keys("model.mla"));
    m.attention_kind = AttentionKind::Mla;
    m.mla.q_lora_rank = a.optional_int("q_lora_rank").value_or(0);
    m.mla.kv_lora_rank = a.required_int("kv_lora_rank");
    m.mla.qk_nope_head_dim = a.required_int("qk_nope_head_dim");
    m.mla.qk_rope_head_dim = a.required_int("qk_rope_head_dim");
    m.mla.v_head_dim = a.required_int("v_head_dim");
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    m.kv_heads = m.heads;  // every head gets its own K and V from the latent
  } else if (!m.is_mla()) {
    m.attention_kind = m.kv_heads == m.heads ? AttentionKind::Mha : AttentionKind::Gqa;
  }
  if (n.has("attention_kind")) {
    const std::string s = n.required_string("attention_kind");
    if (s == "mla" && !m.is_mla())
      n.fail("attention_kind", "mla needs the latent sizes",
             "add an mla: {kv_lora_rank, qk_nope_head_dim, ...} section");
    if (s == "mha" && m.kv_heads != m.heads)
      n.fail("attention_kind", "mha needs kv_heads == heads, got kv_heads " + std::to_string(m.kv_heads),
             "use attention_kind: gqa, or drop kv_heads");
    if (s != "mha" && s != "gqa" && s != "mla")
      n.fail("attention_kind", "unknown attention kind '" + s + "'", "use mha, gqa or mla");
    if (s != "mla" && m.is_mla())
      n.fail("attention_kind", s + " contradicts the mla: section", "use attention_kind: mla");
  }
  if (n.has("sparse_attention")) {
    const config::Node a = n["sparse_attention"];
    a.require_map();
    a.check_keys(config::scenario_keys("model.sparse_attention"));
    m.sparse.index_heads = a.required_int("index_heads");
    m.sparse.index_head_dim = a.required_int("index_head_dim");
    m.sparse.topk_tokens = a.required_int("topk_tokens");
  }
  m.sliding_window = int_or("sliding_window", m.sliding_window);
  m.full_attention_every = static_cast<int>(int_or("full_attention_every", m.full_attention_every));
  m.mtp_layers = static_cast<int>(int_or("mtp_layers", m.mtp_layers));
  if (n.has("attention")) {
    const std::string s = n.required_string("attention");
    if (s == "flash")
      m.attention = AttentionImpl::Flash;
    else if (s == "flash2")
      m.attention = AttentionImpl::Flash2;
    else if (s == "flash1")
      m.attention = AttentionImpl::Flash1;
    else if (s == "unfused")
      m.attention = AttentionImpl::Unfused;
    else
      n.fail("attention", "unknown attention implementation '" + s + "'",
             "use flash, flash2, flash1 or unfused (the attention kind mha/gqa/mla goes in attention_kind)");
  }
  if (n.has("moe")) {
    const config::Node e = n["moe"];
    e.require_map();
    e.check_keys(config::scenario_keys("model.moe"));
    const bool from_hf = m.is_moe();  // then every key is an optional override
    m.moe.experts =
        static_cast<int>(from_hf ? e.optional_int("experts").value_or(m.moe.experts) : e.required_int("experts"));
    m.moe.top_k = static_cast<int>(from_hf ? e.optional_int("top_k").value_or(m.moe.top_k) : e.required_int("top_k"));
    m.moe.shared_experts = static_cast<int>(e.optional_int("shared_experts").value_or(m.moe.shared_experts));
    m.moe.expert_ffn_hidden =
        e.optional_int("expert_ffn_hidden").value_or(m.moe.expert_ffn_hidden ? m.moe.expert_ffn_hidden : m.ffn_hidden);
    m.moe.first_dense_layers =
        static_cast<int>(e.optional_int("first_dense_layers").value_or(m.moe.first_dense_layers));
    m.moe.layer_freq = static_cast<int>(e.optional_int("layer_freq").value_or(m.moe.layer_freq));
    m.moe.imbalance = e.optional_number("imbalance").value_or(m.moe.imbalance);
    m.moe.capacity_factor = e.optional_number("capacity_factor").value_or(m.moe.capacity_factor);
    m.moe.groups = static_cast<int>(e.optional_int("groups").value_or(m.moe.groups));
    m.moe.groups_per_token = static_cast<int>(e.optional_int("groups_per_token").value_or(m.moe.groups_per_token));
  }
  check_model(m, n);
  return m;
}

ModelConfig parse_hf_config(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) && std::filesystem::exists(path, ec))
    throw config::InputError(path, 0, "", "the HuggingFace config is not a regular file (a directory or device)",
                             "give the path of its config.json");
  if (std::filesystem::file_size(path, ec) > config::kMaxYamlBytes && !ec)
    throw config::InputError(path, 0, "", "the HuggingFace config is larger than any config.json",
                             "give the path of its config.json");
  std::ifstream in(path);
  if (!in)
    throw config::InputError(path, 0, "", "cannot open the HuggingFace config",
                             "check the path (relative paths resolve against the scenario file's directory)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw config::InputError(path, 0, "", std::string("malformed JSON: ") + e.what(), "fix the JSON syntax");
  }
  if (!j.is_object()) throw config::InputError(path, 0, "", "expected a JSON object", "give a config.json");
  // The first of `keys` that holds a number (JSON null counts as absent: DeepSeek-V2-Lite has
  // "q_lora_rank": null).
  auto get = [&](std::initializer_list<const char*> keys, int64_t fallback, bool required) -> int64_t {
    for (const char* k : keys)
      if (j.contains(k) && j[k].is_number()) {
        // A float past the integer range (1e308) would not convert: out of range, with the key.
        const double v = j[k].get<double>();
        if (!(std::fabs(v) <= static_cast<double>(config::kMaxYamlInt)))
          throw config::InputError(path, 0, k, "is out of range: " + j[k].dump(), "use the model's real value");
        return j[k].is_number_float() ? static_cast<int64_t>(v) : j[k].get<int64_t>();
      }
    if (required)
      throw config::InputError(path, 0, *keys.begin(), "missing (or not a number)",
                               "a HuggingFace config needs this field; or describe the model in the scenario YAML");
    return fallback;
  };
  const std::string model_type = j.value("model_type", std::string());
  ModelConfig m;
  m.name = std::filesystem::path(path).stem().string();
  if (j.contains("_name_or_path") && j["_name_or_path"].is_string())
    m.name = j["_name_or_path"].get<std::string>();
  else if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
           j["architectures"][0].is_string())
    m.name = j["architectures"][0].get<std::string>();
  m.hidden = get({"hidden_size", "d_model", "n_embd"}, 0, true);
  m.layers = static_cast<int>(get({"num_hidden_layers", "n_layer", "num_layers"}, 0, true));
  m.heads = get({"num_attention_heads", "n_head"}, 0, true);
  m.kv_heads = get({"num_key_value_heads"}, m.heads, false);
  if (j.contains("head_dim") && j["head_dim"].is_number()) {
    m.head_dim = j["head_dim"].get<int64_t>();
  } else if (m.heads > 0) {
    if (m.hidden % m.heads != 0)
      throw config::InputError(path, 0, "num_attention_heads",
                               "hidden_size (" + std::to_string(m.hidden) +
                                   ") is not divisible by num_attention_heads (" + std::to_string(m.heads) +
                                   ") and there is no head_dim",
                               "add \"head_dim\" to the config");
    m.head_dim = m.hidden / m.heads;
  }
  m.ffn_hidden = get({"intermediate_size", "ffn_dim", "n_inner"}, 4 * m.hidden, false);
  m.vocab = get({"vocab_size"}, 0, true);
  // The context length the model supports; a scenario usually trains on less (override seq_len).
  m.seq_len = get({"max_position_embeddings", "n_positions", "seq_length"}, 4096, false);
  // transformers' LlamaConfig, MixtralConfig, Qwen2Config and DeepseekV3Config default to untied.
  m.tied_embeddings = j.value("tie_word_embeddings", false);
  const std::string act = j.value("hidden_act", j.value("activation_function", std::string("silu")));
  m.mlp = act == "silu" || act == "swish" || act == "swiglu" ? Mlp::SwiGlu : Mlp::Gelu;
  m.norm = j.contains("layer_norm_eps") || j.contains("layer_norm_epsilon") ? Norm::LayerNorm : Norm::RmsNorm;
  // Qwen2 (and Qwen2-MoE) always have Q/K/V biases; Llama's attention_bias adds them too.
  m.qkv_bias = model_type == "qwen2" || model_type == "qwen2_moe" || j.value("attention_bias", false);
  m.attention_kind = m.kv_heads == m.heads ? AttentionKind::Mha : AttentionKind::Gqa;
  if (get({"kv_lora_rank"}, 0, false) > 0) {
    m.attention_kind = AttentionKind::Mla;
    m.mla.q_lora_rank = get({"q_lora_rank"}, 0, false);
    m.mla.kv_lora_rank = get({"kv_lora_rank"}, 0, false);
    m.mla.qk_nope_head_dim = get({"qk_nope_head_dim"}, 0, true);
    m.mla.qk_rope_head_dim = get({"qk_rope_head_dim"}, 0, true);
    m.mla.v_head_dim = get({"v_head_dim"}, 0, true);
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    m.kv_heads = m.heads;
    m.qkv_bias = false;
  }
  // Sliding windows: Mistral's "sliding_window" (every layer), unless "use_sliding_window" is
  // false (Qwen2/3 ship a window they do not use); which layers skip it from "layer_types"
  // (GPT-OSS, Gemma 3 in recent transformers) or Gemma 3's "sliding_window_pattern".
  if (j.contains("sliding_window") && j["sliding_window"].is_number() && j.value("use_sliding_window", true)) {
    m.sliding_window = j["sliding_window"].get<int64_t>();
    if (j.contains("sliding_window_pattern") && j["sliding_window_pattern"].is_number())
      m.full_attention_every = j["sliding_window_pattern"].get<int>();
    if (j.contains("layer_types") && j["layer_types"].is_array()) {
      const auto& types = j["layer_types"];
      int first_full = 0;  // 1-based position of the first full-attention layer
      for (size_t i = 0; i < types.size() && !first_full; ++i)
        if (types[i] == "full_attention") first_full = static_cast<int>(i) + 1;
      for (size_t i = 0; i < types.size(); ++i) {
        const bool full = first_full > 0 && (i + 1) % first_full == 0;
        if (types[i] != (full ? "full_attention" : "sliding_attention"))
          throw config::InputError(
              path, 0, "layer_types",
              "layer " + std::to_string(i) + " breaks the every-Nth-layer-full pattern stacksim models",
              "describe the model in the scenario YAML with sliding_window and full_attention_every");
      }
      m.full_attention_every = first_full;
    }
  }
  // DeepSeek-V3.2's sparse attention (config.json: index_n_heads, index_head_dim, index_topk).
  m.sparse.index_heads = get({"index_n_heads"}, 0, false);
  if (m.sparse.index_heads > 0) {
    m.sparse.index_head_dim = get({"index_head_dim"}, 0, true);
    m.sparse.topk_tokens = get({"index_topk"}, 0, true);
  }
  m.mtp_layers = static_cast<int>(get({"num_nextn_predict_layers", "mtp_num_layers"}, 0, false));
  const int64_t experts = get({"num_local_experts", "n_routed_experts", "num_experts"}, 0, false);
  if (experts > 0) {
    m.moe.experts = static_cast<int>(experts);
    m.moe.top_k = static_cast<int>(get({"num_experts_per_tok", "moe_top_k"}, 1, false));
    m.moe.expert_ffn_hidden = get({"moe_intermediate_size"}, m.ffn_hidden, false);
    m.moe.shared_experts = static_cast<int>(get({"n_shared_experts"}, 0, false));
    // Qwen2-MoE describes one shared expert of shared_expert_intermediate_size: count it in
    // routed-expert widths when it is a whole multiple.
    const int64_t shared_ffn = get({"shared_expert_intermediate_size"}, 0, false);
    if (shared_ffn > 0 && m.moe.expert_ffn_hidden > 0 && shared_ffn % m.moe.expert_ffn_hidden == 0)
      m.moe.shared_experts = static_cast<int>(shared_ffn / m.moe.expert_ffn_hidden);
    m.moe.first_dense_layers = static_cast<int>(get({"first_k_dense_replace"}, 0, false));
    m.moe.layer_freq = static_cast<int>(get({"moe_layer_freq"}, 1, false));
    // DeepSeek's group-limited routing; n_group 1 (or topk_group = n_group) restricts nothing.
    const int64_t groups = get({"n_group"}, 0, false), per_token = get({"topk_group"}, 0, false);
    if (groups > 1 && per_token > 0 && per_token < groups) {
      m.moe.groups = static_cast<int>(groups);
      m.moe.groups_per_token = static_cast<int>(per_token);
    }
  }
  validate(m, [&](const std::string& key, const std::string& reason, const std::string& fix) {
    throw config::InputError(path, 0, key, reason,
                             fix + " (in the HuggingFace config, or override it in the scenario)");
  });
  return m;
}

}  // namespace stacksim::workload
