// FLOP counts of a training step, as the field reports them.
//
// Model FLOPs (what MFU and "model TFLOP/s" divide; Narayanan et al. SC'21 appendix, Megatron-LM's
// num_floating_point_operations, NeMo's flops callback): every GEMM three times (forward, dgrad,
// wgrad) at 2 FLOPs per multiply-add, so 6 x (GEMM weights a token multiplies through) x tokens,
// plus the attention core, forward 2*s*heads*(qk_head_dim + v_head_dim) per token and layer
// (QK^T and scores x V; 4*s*h for plain MHA), times three for training; the logits GEMM included;
// no recomputation. Counted: Q/K/V/output projections (MLA: down and up projections), MLP or
// top_k routed + shared experts. Not counted (as in Megatron): routers, norms, element-wise ops,
// embedding lookups.
//
// The causal mask: Megatron-LM until 2024, SC'21 and NeMo 24.x count the full s x s attention
// (AttentionCount::Full, the default here, so that published TFLOP/s of those releases compare
// like with like); Megatron-LM since 2025 multiplies the attention core by 0.5 for causal masks
// (AttentionCount::CausalHalf); the validation's case policy compares such a source's TFLOP/s
// under that count (validate/training_cases.cpp, counts_causal_attention_half).
//
// Hardware FLOPs add what recomputation executes again: full = one more forward of every layer
// (not the logits), selective = one more forward of the attention core.
#pragma once
#include <cstdint>

#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {

enum class AttentionCount { Full, CausalHalf };

// Forward FLOPs of one token through layer `layer` (GEMMs + attention core at sequence seq_len).
double layer_forward_flops_per_token(const ModelConfig& m, int layer, AttentionCount count = AttentionCount::Full);
// Forward FLOPs of the attention core alone, per token, in `layer`. A sliding window of w < s keys
// counts w keys per query (Full) or the causal mean of min(position + 1, w) (CausalHalf).
double attention_core_forward_flops_per_token(const ModelConfig& m, int layer,
                                              AttentionCount count = AttentionCount::Full);
// Forward FLOPs of the logits GEMM per token.
double logits_forward_flops_per_token(const ModelConfig& m);

double model_flops_per_step(const ModelConfig& m, int64_t global_batch, AttentionCount count = AttentionCount::Full);
double model_flops_per_step(const ModelConfig& m, const ParallelPlan& p);
double hardware_flops_per_step(const ModelConfig& m, const ParallelPlan& p);
// Narayanan et al. SC'21, eq. (3): 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) for GPT models
// (ffn = 4h, MHA) with full recomputation (four passes over the layers, three over the logits).
double megatron_sc21_flops(double B, double s, double l, double h, double V);

}  // namespace stacksim::workload
