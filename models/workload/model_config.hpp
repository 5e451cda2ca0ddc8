// Decoder-only transformer descriptions (dense and MoE), from scenario YAML or a HuggingFace
// config.json (Llama, Mistral/Mixtral, Qwen2, DeepSeek-V2/V3 field names).
//
//   model:
//     name: Llama-3 70B
//     layers: 80
//     hidden: 8192
//     heads: 64
//     kv_heads: 8            # GQA (default: heads)
//     head_dim: 128          # default: hidden / heads
//     ffn_hidden: 28672
//     vocab: 128256
//     seq_len: 8192
//     mlp: swiglu            # gelu | swiglu
//     attention: flash       # flash | flash2 | unfused
//     tied_embeddings: false
//     moe: {experts: 8, top_k: 2, shared_experts: 0, expert_ffn_hidden: 14336,
//           first_dense_layers: 0, imbalance: 1.1}
//   or  model: {hf_config: configs/llama3-8b.json, seq_len: 8192}
#pragma once
#include <cstdint>
#include <string>

#include "config/yaml.hpp"

namespace stacksim::workload {

enum class Mlp { Gelu, SwiGlu };
// flash: the best fused attention kernels (cuDNN, FlashAttention-3); flash2: FlashAttention-2;
// neither keeps s^2 tensors in HBM. unfused: Megatron's
// pre-2022 attention (QK^T batched GEMM, fused scale-mask-softmax, dropout, PV batched GEMM) whose
// s^2 score tensors cross HBM several times and are kept for the backward pass.
enum class AttentionImpl { Flash, Flash2, Unfused };

struct MoeConfig {
  int experts = 0;            // routed experts (0 = dense model)
  int top_k = 1;
  int shared_experts = 0;
  int64_t expert_ffn_hidden = 0;
  int first_dense_layers = 0; // the first k layers are dense (DeepSeek's first_k_dense_replace)
  double imbalance = 1.1;     // tokens of the busiest expert rank over the mean (load imbalance)
};

struct ModelConfig {
  std::string name = "model";
  int layers = 0;
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  Mlp mlp = Mlp::Gelu;
  AttentionImpl attention = AttentionImpl::Flash;
  bool tied_embeddings = false;
  MoeConfig moe;

  bool is_moe() const { return moe.experts > 0; }
  bool is_moe_layer(int layer) const { return is_moe() && layer >= moe.first_dense_layers; }
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
  // Parameter counts (weights of GEMMs, norms and embeddings).
  double attention_params() const;
  double dense_mlp_params() const;
  double expert_params() const;       // one routed expert
  double layer_params(int layer) const;
  double embedding_params() const;    // input embedding (+ output layer when untied)
  double total_params() const;
  double active_params() const;       // touched per token (top_k experts)
};

ModelConfig parse_model(const config::Node& model, const std::string& base_dir);
ModelConfig parse_hf_config(const std::string& path);
void check_model(const ModelConfig& m, const config::Node& where);

}  // namespace stacksim::workload
