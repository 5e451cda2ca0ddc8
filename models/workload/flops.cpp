#include "models/workload/flops.hpp"

#include "models/workload/ops.hpp"  // layer_recompute

namespace stacksim::workload {

double attention_core_forward_flops_per_token(const ModelConfig& m, int layer, AttentionCount count) {
  const double per_key = 2.0 * m.heads * (m.head_dim + m.v_head_dim());
  const double s = static_cast<double>(m.seq_len);
  const int64_t cap = m.attended_keys_cap(layer);  // a sliding window or sparse attention's top-k
  if (cap <= 0 || cap >= m.seq_len) {
    const double full = per_key * s;
    return count == AttentionCount::CausalHalf ? 0.5 * full : full;
  }
  const double w = static_cast<double>(cap);
  return per_key * (count == AttentionCount::CausalHalf ? (w * (w + 1.0) / 2.0 + (s - w) * w) / s : w);
}

double logits_forward_flops_per_token(const ModelConfig& m) { return 2.0 * static_cast<double>(m.vocab) * m.hidden; }

double layer_forward_flops_per_token(const ModelConfig& m, int layer, AttentionCount count) {
  double weights = m.attention_gemm_params();
  if (m.is_moe_layer(layer))
    weights += m.expert_params() * (m.moe.top_k + m.moe.shared_experts);
  else
    weights += m.dense_mlp_params();
  // DSA's indexer scores every earlier key (its projections are in attention_gemm_params).
  const double indexer = 2.0 * m.sparse.index_heads * m.sparse.index_head_dim * 0.5 * static_cast<double>(m.seq_len);
  return 2.0 * weights + attention_core_forward_flops_per_token(m, layer, count) + indexer;
}

double model_flops_per_step(const ModelConfig& m, int64_t global_batch, AttentionCount count) {
  double per_token = logits_forward_flops_per_token(m);
  for (int l = 0; l < m.layers; ++l) per_token += layer_forward_flops_per_token(m, l, count);
  // Multi-token prediction (Megatron-LM counts it): per depth the 2h -> h projection, a layer like
  // the last, and the logits again.
  per_token +=
      m.mtp_layers * (2.0 * 2.0 * static_cast<double>(m.hidden) * m.hidden +
                      layer_forward_flops_per_token(m, m.layers - 1, count) + logits_forward_flops_per_token(m));
  return 3.0 * per_token * static_cast<double>(global_batch) * m.seq_len;
}

double model_flops_per_step(const ModelConfig& m, const ParallelPlan& p) {
  return model_flops_per_step(m, p.global_batch);
}

namespace {
// The matmul FLOPs torchtitan's op-level checkpointing runs again, per token: the layer's
// recomputed GEMMs (ops.cpp) on one rank that holds the whole layer and one sequence.
double op_checkpoint_recomputed_flops_per_token(const ModelConfig& m, const ParallelPlan& p, int layer) {
  ParallelPlan whole = p;
  whole.tp = whole.cp = whole.ep = 1;
  whole.etp = 0;
  whole.micro_batch = 1;
  whole.sequence_parallel = false;
  double flops = 0;
  for (const Op& o : layer_backward_ops(m, whole, layer))
    if (o.recompute && o.kind == OpKind::Gemm) flops += o.flops;
  return flops / m.seq_len;
}
}  // namespace

double hardware_flops_per_step(const ModelConfig& m, const ParallelPlan& p) {
  const double tokens = static_cast<double>(p.global_batch) * m.seq_len;
  double recomputed_per_token = 0;
  for (int l = 0; l < m.layers; ++l) {
    const Recompute rc = layer_recompute(m, p, l);
    if (rc == Recompute::Full) recomputed_per_token += layer_forward_flops_per_token(m, l);
    if (rc == Recompute::Selective) recomputed_per_token += attention_core_forward_flops_per_token(m, l);
    if (rc == Recompute::Op) recomputed_per_token += op_checkpoint_recomputed_flops_per_token(m, p, l);
  }
  return model_flops_per_step(m, p) + recomputed_per_token * tokens;
}

double megatron_sc21_flops(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

}  // namespace stacksim::workload
