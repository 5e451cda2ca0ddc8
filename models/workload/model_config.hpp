// Decoder-only transformer descriptions (dense and MoE; MHA, GQA or DeepSeek's MLA attention),
// from scenario YAML or a HuggingFace config.json (Llama, Mistral/Mixtral, Qwen2, DeepSeek-V2/V3
// field names).
//
//   model:
//     name: Llama-3 70B
//     layers: 80
//     hidden: 8192
//     heads: 64
//     kv_heads: 8            # GQA (default: heads)
//     head_dim: 128          # default: hidden / heads (must divide when head_dim is not given)
//     ffn_hidden: 28672      # default: 4 * hidden
//     vocab: 128256
//     seq_len: 8192
//     mlp: swiglu            # gelu | swiglu
//     norm: rmsnorm          # layernorm (default, Megatron's) | rmsnorm
//     tied_embeddings: false
//     qkv_bias: false        # Qwen2 has biases on the Q, K, V projections
//     attention: flash       # kernel: flash | flash2 | flash1 | unfused (see AttentionImpl)
//     attention_kind: gqa    # mha | gqa | mla (default: mha if kv_heads == heads, else gqa;
//                            #  mla when an `mla:` section is given)
//     mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64,
//           v_head_dim: 128}
//     sparse_attention: {index_heads: 64, index_head_dim: 128, topk_tokens: 2048}   # DeepSeek-V3.2's DSA
//     moe: {experts: 8, top_k: 2, shared_experts: 0, expert_ffn_hidden: 14336,
//           first_dense_layers: 0, layer_freq: 1, imbalance: 1.1, capacity_factor: 0}
//   or  model: {hf_config: configs/llama3-8b.json, seq_len: 8192}   (keys given beside
//       hf_config override the file; a relative path resolves against the scenario's directory)
//   or  model: {preset: Llama 3 70B, seq_len: 4096}   (a bundled public model, model_catalog.hpp;
//       keys beside it override it the same way)
//
// Parameter counts: GEMM weights, biases where the architecture has them, norms (RMSNorm: a
// scale, h; LayerNorm: scale and shift, 2h), embeddings (input, plus the output layer when untied)
// and MoE routers. Not counted: DeepSeek-V3's multi-token-prediction module (its published 671B
// also leaves it out) and position embeddings (all supported families use rotary embeddings).
#pragma once
#include <cstdint>
#include <string>

#include "config/yaml.hpp"

namespace stacksim::workload {

enum class Mlp { Gelu, SwiGlu };
enum class Norm { LayerNorm, RmsNorm };
enum class AttentionKind { Mha, Gqa, Mla };
// flash: the best fused attention kernels (cuDNN, FlashAttention-3); flash2: FlashAttention-2;
// flash1: the original FlashAttention (Dao et al. 2022, 25-40% of A100 peak);
// neither keeps s^2 tensors in HBM. unfused: Megatron's
// pre-2022 attention (QK^T batched GEMM, fused scale-mask-softmax, dropout, PV batched GEMM) whose
// s^2 score tensors cross HBM several times and are kept for the backward pass.
enum class AttentionImpl { Flash, Flash2, Flash1, Unfused };

// DeepSeek-V2/V3 multi-head latent attention (DeepSeek-V2 paper, section 2.1): Q and the joint
// K/V are projected down to low-rank latents, normed, and projected up per head; 64 of each
// Q/K head's dimensions carry the rotary part (the K rope part is shared by all heads).
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0: a full-rank Q projection (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// DeepSeek Sparse Attention (DeepSeek-V3.2 report, section 2.1): a lightning indexer (index_heads
// small heads of index_head_dim, FP8, its own cached key per token) scores every earlier token,
// and the main attention then attends only the topk_tokens best of them. The indexer stays
// quadratic in the context but is cheap per pair; the main attention's pairs are capped.
struct SparseAttentionConfig {
  int64_t index_heads = 0;  // 0: dense attention
  int64_t index_head_dim = 0;
  int64_t topk_tokens = 0;
};

struct MoeConfig {
  int experts = 0;  // routed experts (0 = dense model)
  int top_k = 1;
  int shared_experts = 0;  // always-on experts of expert_ffn_hidden each
  int64_t expert_ffn_hidden = 0;
  int first_dense_layers = 0;  // the first k layers are dense (DeepSeek's first_k_dense_replace)
  int layer_freq = 1;          // later, layer l is MoE when l % layer_freq == 0 (DeepSeek's moe_layer_freq)
  double imbalance = 1.1;      // tokens of the busiest expert rank over the mean (dropless routing)
  double capacity_factor = 0;  // > 0: tokens beyond capacity_factor x the mean are dropped (GShard)
  // Group-limited routing (DeepSeek-V2/V3's n_group / topk_group): the experts form `groups`
  // contiguous groups and a token's top_k experts come from at most `groups_per_token` of them.
  // 0 = unrestricted. Deployed with one group per node, a token reaches at most that many nodes.
  int groups = 0;
  int groups_per_token = 0;

  // Tokens the busiest expert processes over the mean.
  double load_factor() const;
};

struct ModelConfig {
  std::string name = "model";
  int layers = 0;
  // head_dim is the Q.K dimension per head (MLA: qk_nope_head_dim + qk_rope_head_dim).
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  Mlp mlp = Mlp::Gelu;
  Norm norm = Norm::LayerNorm;
  AttentionKind attention_kind = AttentionKind::Mha;
  AttentionImpl attention = AttentionImpl::Flash;
  bool tied_embeddings = false;
  bool qkv_bias = false;
  // Sliding-window attention (Mistral, Gemma 2/3, GPT-OSS): each query attends at most the last
  // sliding_window keys (0 = the whole causal context); with full_attention_every N, every Nth
  // layer (layers N, 2N, ... counting from 1: Megatron's window_attn_skip_freq, HF's layer_types)
  // attends the whole context instead.
  int64_t sliding_window = 0;
  int full_attention_every = 0;
  // Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers, Megatron's mtp_num_layers):
  // each depth adds, on the last pipeline stage, two norms, a 2h -> h projection, one transformer
  // layer like the model's last, and the shared output head with its own loss.
  int mtp_layers = 0;
  MlaConfig mla;
  SparseAttentionConfig sparse;
  MoeConfig moe;

  bool is_moe() const { return moe.experts > 0; }
  bool is_moe_layer(int layer) const {
    return is_moe() && layer >= moe.first_dense_layers && layer % moe.layer_freq == 0;
  }
  bool is_mla() const { return attention_kind == AttentionKind::Mla; }
  // Keys a query of `layer` may attend back to (0 = no limit).
  int64_t attention_window(int layer) const {
    if (sliding_window <= 0 || (full_attention_every > 0 && (layer + 1) % full_attention_every == 0)) return 0;
    return sliding_window;
  }
  bool is_sparse_attention() const { return sparse.index_heads > 0; }
  // Keys one query of `layer` attends at most (0 = its whole causal context): a sliding window or
  // the sparse attention's top-k.
  int64_t attended_keys_cap(int layer) const {
    return is_sparse_attention() ? sparse.topk_tokens : attention_window(layer);
  }
  // The indexer's projections (q from the query latent, one shared key, per-head weights).
  double indexer_params() const;
  // Bytes the indexer caches per token and layer: its key in FP8 with one FP32 scale (DeepSeek's
  // V3.2 inference code), whatever the main KV cache's format.
  double indexer_key_bytes() const { return is_sparse_attention() ? sparse.index_head_dim + 4.0 : 0.0; }
  int64_t v_head_dim() const { return is_mla() ? mla.v_head_dim : head_dim; }
  int64_t q_width() const { return heads * head_dim; }             // Q (and MLA's per-head K) width
  int64_t kv_width() const { return kv_heads * head_dim; }         // K width (= V width unless MLA)
  int64_t attn_out_width() const { return heads * v_head_dim(); }  // input of the output projection
  int64_t mlp_gemms() const { return mlp == Mlp::SwiGlu ? 3 : 2; }
  int64_t norm_params() const { return norm == Norm::LayerNorm ? 2 * hidden : hidden; }

  // Parameter counts.
  double attention_params() const;       // projections (+ biases, MLA latent norms)
  double attention_gemm_params() const;  // the weights a token multiplies through
  double dense_mlp_params() const;
  double expert_params() const;  // one routed (or shared) expert
  double router_params() const { return static_cast<double>(hidden) * moe.experts; }
  double layer_params(int layer) const;  // + the layer's two norms
  double embedding_params() const;       // input embedding (+ output layer when untied)
  double total_params() const;           // the main model (DeepSeek-V3's 671B: without MTP)
  double active_params() const;          // touched per token (top_k + shared experts)
};

// The scenario YAML's `model:` section. `base_dir` resolves a relative hf_config path.
ModelConfig parse_model(const config::Node& model, const std::string& base_dir);
// Same, resolving hf_config against the directory of the file the node came from.
ModelConfig parse_model(const config::Node& model);
// A HuggingFace config.json; InputError (naming the file and the JSON key) when unusable.
ModelConfig parse_hf_config(const std::string& path);
// InputError at `where` for non-positive sizes, kv_heads not dividing heads, bad MoE settings.
void check_model(const ModelConfig& m, const config::Node& where);

}  // namespace stacksim::workload
