// The case's model: its shape (stated, or from the catalogue entry its name names) and architecture.
#include "validate/case_policy.hpp"

#include <sstream>

#include "models/workload/model_catalog.hpp"

namespace stacksim::analysis::case_policy {

// The tokenizer of a model family named in the case (public model configs), else Megatron's
// default GPT-2 BPE vocabulary padded to a multiple of 1024 * 8.
std::pair<long long, std::string> default_vocab(const std::string& name) {
  const std::string n = lowercase(name);
  const auto named = [&](const char* k) { return n.find(k) != std::string::npos; };
  if (named("nemotron")) return {256000, "the Nemotron tokenizer"};
  if (named("deepseek-v3") || named("deepseek v3")) return {129280, "the DeepSeek-V3 tokenizer"};
  if (named("deepseek-v2") || named("deepseek v2")) return {102400, "the DeepSeek-V2 tokenizer"};
  if (named("qwen")) return {151936, "the Qwen2 tokenizer"};
  if (named("llama3") || named("llama-3") || named("llama 3")) return {128256, "the Llama-3 tokenizer"};
  if (named("llama2") || named("llama-2") || named("llama 2") || named("mistral") || named("mixtral"))
    return {32000, "the Llama-2/Mistral tokenizer"};
  return {51200, "GPT-2 BPE padded, Megatron's default"};
}

// The bundled catalogue's entry for the model the case names, when every shape field the case
// states agrees with it; a case that names a model but states another shape (a head count changed
// for a benchmark, a padded variant) describes a variant, and nothing is taken from the entry.
const workload::CatalogModel* named_catalogue_model(const YAML::Node& m) {
  if (!has(m, "name")) return nullptr;
  const workload::CatalogModel* e = workload::bundled_models().find(get<std::string>(m, "name"));
  if (!e) return nullptr;
  const workload::ModelConfig& k = e->config;
  const auto agrees = [&](const YAML::Node& n, const char* key, long long v) {
    return !has(n, key) || positive<long long>(n, key) == v;
  };
  if (!agrees(m, "layers", k.layers) || !agrees(m, "hidden", k.hidden) || !agrees(m, "heads", k.heads) ||
      !agrees(m, "kv_heads", k.kv_heads) || !agrees(m, "ffn_hidden", k.ffn_hidden))
    return nullptr;
  if (has(m, "moe")) {
    const YAML::Node moe = m["moe"];
    if (!k.is_moe() || !agrees(moe, "experts", k.moe.experts) || !agrees(moe, "top_k", k.moe.top_k)) return nullptr;
  }
  return e;
}

// The case with the shape fields it leaves null taken from the catalogue entry its model name
// names (policy: a named public model has its public shape), each recorded in `defaults`.
YAML::Node with_catalogue_shape(const YAML::Node& c, std::vector<std::string>& defaults) {
  const workload::CatalogModel* e = named_catalogue_model(c["model"]);
  if (!e) return c;
  const workload::ModelConfig& k = e->config;
  YAML::Node full = YAML::Clone(c);
  YAML::Node m = full["model"];
  const std::string from = " (the catalogue's " + e->name + ")";
  const auto fill = [&](YAML::Node n, const std::string& prefix, const char* key, const auto& value) {
    if (has(n, key)) return;
    n[key] = value;
    std::ostringstream v;
    v << value;
    defaults.push_back(prefix + key + ": " + v.str() + from);
  };
  fill(m, "model.", "layers", k.layers);
  fill(m, "model.", "hidden", k.hidden);
  fill(m, "model.", "heads", k.heads);
  if (!k.is_mla()) fill(m, "model.", "kv_heads", k.kv_heads);
  fill(m, "model.", "ffn_hidden", k.ffn_hidden);
  fill(m, "model.", "vocab", k.vocab);
  if (k.seq_len > 0) fill(m, "model.", "seq_len", k.seq_len);
  fill(m, "model.", "mlp", std::string(k.mlp == workload::Mlp::SwiGlu ? "swiglu" : "gelu"));
  if (k.is_moe()) {
    if (!has(m, "moe")) m["moe"] = YAML::Node(YAML::NodeType::Map);
    YAML::Node moe = m["moe"];
    fill(moe, "model.moe.", "experts", k.moe.experts);
    fill(moe, "model.moe.", "top_k", k.moe.top_k);
    fill(moe, "model.moe.", "shared_experts", k.moe.shared_experts);
    fill(moe, "model.moe.", "expert_ffn_hidden", k.moe.expert_ffn_hidden);
  }
  return full;
}

// The model's shape: layers, hidden, heads, sequence, K/V heads, MLP width and kind, vocabulary.
void model_shape(CaseContext& x) {
  const YAML::Node& m = x.m;
  std::vector<std::string>& defaults = x.defaults;
  const bool old_gen = x.old_gen;
  const workload::CatalogModel*& named = x.named;
  std::string& from_catalogue = x.from_catalogue;
  std::string& att = x.att;
  YAML::Node& mo = x.mo;
  long long& ffn = x.ffn;
  if (!m) throw std::runtime_error("the case has no model");
  for (const char* k : {"layers", "hidden"})
    if (!has(m, k))
      throw std::runtime_error(std::string("model.") + k + " is null (and the model name is not in the catalogue)");
  // The entry the name names (its stated shape fields were filled from it already): the
  // architecture details the case format has no field for.
  named = named_catalogue_model(m);
  from_catalogue = named ? " (the catalogue's " + named->name + ")" : "";
  att = has(m, "attention") ? get<std::string>(m, "attention") : "";  // the attention text
  mo["name"] = has(m, "name") ? get<std::string>(m, "name") : std::string("model");
  const long long hidden = positive<long long>(m, "hidden");
  mo["layers"] = positive<long long>(m, "layers");
  mo["hidden"] = hidden;
  if (has(m, "heads")) {
    mo["heads"] = positive<long long>(m, "heads");
  } else if (hidden % 128 == 0) {
    // The head dimension of every large model family since GPT-3 6.7B (Llama, MPT, Mistral, Qwen).
    mo["heads"] = hidden / 128;
    defaults.push_back("model.heads: hidden / 128 = " + std::to_string(hidden / 128) + " (head dimension 128)");
  } else {
    throw std::runtime_error("model.heads is null (and hidden is not a multiple of a 128-wide head)");
  }
  if (has(m, "seq_len")) {
    mo["seq_len"] = positive<long long>(m, "seq_len");
  } else {
    // GPT-3's 2048 was the common pretraining length of the Volta/Ampere era; Llama 2's 4096 later.
    mo["seq_len"] = old_gen ? 2048 : 4096;
    defaults.push_back(std::string("model.seq_len: ") +
                       (old_gen ? "2048 (Volta/Ampere era)" : "4096 (Hopper and later)"));
  }
  if (has(m, "kv_heads"))
    mo["kv_heads"] = positive<long long>(m, "kv_heads");
  else if (!(named && named->config.is_mla()) && att.find("MLA") == std::string::npos &&
           att.find("latent") == std::string::npos)
    defaults.push_back("model.kv_heads: = heads (multi-head attention)");  // MLA gives every head its own K and V
  ffn = 4 * hidden;
  if (has(m, "ffn_hidden"))
    ffn = positive<long long>(m, "ffn_hidden");
  else
    defaults.push_back("model.ffn_hidden: 4 * hidden");
  mo["ffn_hidden"] = ffn;
  if (has(m, "vocab")) {
    mo["vocab"] = positive<long long>(m, "vocab");
  } else {
    const auto [vocab, why] = default_vocab(has(m, "name") ? get<std::string>(m, "name") : "");
    mo["vocab"] = vocab;
    defaults.push_back("model.vocab: " + std::to_string(vocab) + " (" + why + ")");
  }
  if (has(m, "mlp")) {
    mo["mlp"] = lowercase(get<std::string>(m, "mlp"));
  } else if (has(m, "moe")) {
    mo["mlp"] = "swiglu";  // every published MoE family (Mixtral, DeepSeek, Qwen-MoE) gates its MLPs
    defaults.push_back("model.mlp: swiglu (MoE models)");
  } else {
    // Gated MLPs use 8/3 h (LLaMA-1/2 small) up to 3.5 h (Llama-2-70B, Llama-3, Mistral/Mixtral:
    // 14336/4096, 28672/8192); GPT-style (and squared-ReLU Nemotron) MLPs use 4 h. Split between.
    const bool gated = static_cast<double>(ffn) / hidden < 3.75;
    mo["mlp"] = gated ? "swiglu" : "gelu";
    defaults.push_back(std::string("model.mlp: ") +
                       (gated ? "swiglu (ffn_hidden < 3.75 h)" : "gelu (ffn_hidden >= 3.75 h)"));
  }
}

// Embeddings, norm, latent attention, head dimension and sliding window: the catalogue's, the
// family's or the notes'.
void model_architecture(CaseContext& x) {
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  const workload::CatalogModel*& named = x.named;
  std::string& from_catalogue = x.from_catalogue;
  std::string& att = x.att;
  YAML::Node& mo = x.mo;
  // Embeddings tied or not as the notes say, before the catalogue's family default.
  const std::optional<bool> tied = notes_tied_embeddings(case_notes);
  const bool tied_stated = tied.has_value();
  if (tied_stated) {
    mo["tied_embeddings"] = *tied;
    defaults.push_back(std::string("model.tied_embeddings: ") + (*tied ? "true" : "false") + " (the notes)");
  }
  // The gated-MLP families (LLaMA, Mistral/Mixtral, Qwen, DeepSeek) all normalise with RMSNorm;
  // GPT-style models with LayerNorm (the model default).
  if (named) {
    const workload::ModelConfig& k = named->config;
    if (k.norm == workload::Norm::RmsNorm) mo["norm"] = "rmsnorm";
    defaults.push_back(std::string("model.norm: ") + (k.norm == workload::Norm::RmsNorm ? "rmsnorm" : "layernorm") +
                       from_catalogue);
    for (const auto& [key, on] :
         {std::pair<const char*, bool>{"tied_embeddings", k.tied_embeddings}, {"qkv_bias", k.qkv_bias}})
      if (on && !(std::string(key) == "tied_embeddings" && tied_stated)) {
        mo[key] = true;
        defaults.push_back(std::string("model.") + key + ": true" + from_catalogue);
      }
  } else if (mo["mlp"].as<std::string>() == "swiglu") {
    mo["norm"] = "rmsnorm";
    defaults.push_back("model.norm: rmsnorm (gated-MLP families)");
  }
  // A norm the notes state as a config value ("norm_type = layernorm", "normalization: RMSNorm")
  // wins over the catalogue's and the family default.
  static const std::regex norm_said(R"((norm_type|normalization)\W{0,4}(layernorm|rmsnorm|layer_norm|rms_norm)\b)");
  if (std::smatch nm; std::regex_search(low_notes, nm, norm_said)) {
    const std::string norm = nm[2].str().find("rms") != std::string::npos ? "rmsnorm" : "layernorm";
    if (!mo["norm"] || mo["norm"].as<std::string>() != norm) {
      mo["norm"] = norm;
      defaults.push_back("model.norm: " + norm + " (the notes' " + nm[1].str() + ")");
    }
  }
  // Multi-head latent attention stated in words (DeepSeek-V2/V3): its latent ranks, read literally;
  // the per-head dimensions are DeepSeek's 128 (nope and value) when not stated.
  if (att.find("MLA") != std::string::npos || att.find("latent") != std::string::npos) {
    const long long kv = number_after(att, "kv compression"), q = number_after(att, "query compression"),
                    rope = number_after(att, "rope head dim");
    if (kv <= 0 || rope <= 0)
      throw std::runtime_error("model.attention names MLA without a kv compression rank and a RoPE head dim");
    YAML::Node mla;
    mla["q_lora_rank"] = q;
    mla["kv_lora_rank"] = kv;
    mla["qk_rope_head_dim"] = rope;
    mla["qk_nope_head_dim"] = 128;
    mla["v_head_dim"] = 128;
    mo["mla"] = mla;
    defaults.push_back(
        "model.mla: ranks from the attention text; qk_nope_head_dim = v_head_dim = 128 (DeepSeek-V2/V3)");
  } else if (named && named->config.is_mla()) {
    mo["mla"] = YAML::Clone(named->model.yaml()["mla"]);
    defaults.push_back("model.mla: latent ranks and head dimensions" + from_catalogue);
  }
  // A head dimension other than hidden / heads (GPT-OSS: 64 heads of 64 on hidden 2880), and a
  // sliding window with the layers that skip it, stated in words.
  if (att.find("MLA") == std::string::npos) {
    if (const long long hd = number_after(att, "head dim"); hd > 0) {
      mo["head_dim"] = hd;
      defaults.push_back("model.head_dim: " + std::to_string(hd) + " (from the attention text)");
    }
  }
  if (!mo["head_dim"] && !mo["mla"] && named && named->model.has("head_dim")) {
    mo["head_dim"] = named->config.head_dim;
    defaults.push_back("model.head_dim: " + std::to_string(named->config.head_dim) + from_catalogue);
  }
  if (number_after(att, "sliding window") <= 0 && named && named->config.sliding_window > 0) {
    mo["sliding_window"] = named->config.sliding_window;
    if (named->config.full_attention_every > 0) mo["full_attention_every"] = named->config.full_attention_every;
    defaults.push_back("model.sliding_window: " + std::to_string(named->config.sliding_window) +
                       (named->config.full_attention_every > 0
                            ? ", full attention every " + std::to_string(named->config.full_attention_every) + " layers"
                            : std::string()) +
                       from_catalogue);
  }
  if (const long long window = number_after(att, "sliding window"); window > 0) {
    mo["sliding_window"] = window;
    static const std::regex every_nth_full("every ([0-9]+)(st|nd|rd|th) layer (uses )?full");
    std::smatch hit;
    const std::string low = lowercase(att);
    if (std::regex_search(low, hit, every_nth_full))
      mo["full_attention_every"] = std::stoi(hit[1].str());
    else if (low.find("alternate layers") != std::string::npos)
      mo["full_attention_every"] = 2;
  }
}

}  // namespace stacksim::analysis::case_policy
