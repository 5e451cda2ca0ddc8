#include "models/workload/memory.hpp"

#include <algorithm>

#include "models/workload/ops.hpp"

namespace stacksim::workload {

double activation_bytes_per_layer(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const double s = static_cast<double>(m.seq_len) / p.cp, b = p.micro_batch, h = m.hidden, t = p.tp;
  const double sb = s * b;
  const double sp_split = p.sp() ? t : 1.0;
  const Recompute rc = layer_recompute(m, p, layer);
  if (rc == Recompute::Full) return 2.0 * sb * h / sp_split;

  double replicated = 10.0 * sb * h;
  if (m.is_mla())
    replicated += 2.0 * sb * (2.0 * m.mla.q_lora_rank + 2.0 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  const double q = static_cast<double>(m.q_width()), k = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.kv_heads) * m.v_head_dim(), o = static_cast<double>(m.attn_out_width());
  double split = 2.0 * sb * (q + k + v + o);
  const double per_ffn_element = m.mlp == Mlp::SwiGlu ? 6.0 : 4.0;
  double unsplit = 0;     // MoE: the routed tokens this rank holds whole (not split over tp)
  double fc2_inputs = 0;  // elements entering the MLPs' second GEMM, split over tp
  double fc2_whole = 0;   // ... held whole: whole experts (etp 1) on this rank's own routed tokens
  if (m.is_moe_layer(layer)) {
    const double routed = sb * m.moe.top_k * m.moe.load_factor();
    if (p.experts_folded()) {
      unsplit += 2.0 * routed / sp_split * h;
      fc2_whole = routed / sp_split * m.moe.expert_ffn_hidden;
      fc2_inputs = sb * m.moe.shared_experts * m.moe.expert_ffn_hidden;
    } else {  // experts split over tp see the routed tokens of all tp ranks
      unsplit += 2.0 * routed * h;
      fc2_inputs = (routed + sb * m.moe.shared_experts) * m.moe.expert_ffn_hidden;
    }
  } else {
    fc2_inputs = sb * m.ffn_hidden;
  }
  split += per_ffn_element * fc2_inputs;
  unsplit += per_ffn_element * fc2_whole;
  if (p.precision == Precision::FP8) {  // linear-layer inputs kept as their FP8 copies
    replicated -= 2.0 * sb * h;
    split -= sb * o + fc2_inputs;
    unsplit -= fc2_whole;
  }
  double scores = 0;
  if (m.attention == AttentionImpl::Unfused && rc == Recompute::None) scores = 5.0 * m.heads * s * m.seq_len * b;
  return replicated / sp_split + split / t + scores / t + unsplit;
}

int in_flight_micro_batches(const ParallelPlan& p, int stage) {
  const int m = p.num_micro_batches();
  if (p.pp == 1) return 1;
  if (p.schedule == Schedule::GPipe) return m;
  // DualPipe: PP + 1 chunks' activations at the peak (the DeepSeek-V3 report's Table 2).
  if (p.dualpipe()) return p.pp + 1;
  if (p.vp > 1) return std::min(m * p.vp, 2 * (p.pp - stage - 1) + (p.vp - 1) * p.pp + 1);
  return std::min(m, p.pp - stage);
}

MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p, int stage) {
  MemoryFootprint f;
  f.stage = stage;
  const double all = stage_params_per_rank(m, p, stage), shard = stage_params_sharded(m, p, stage);
  auto sharded = [&](bool sharded_over_dp) { return sharded_over_dp ? shard : all; };
  // FSDP under a pipeline keeps the stage's parameters gathered and accumulates unsharded
  // gradients until the last micro-batch (replay.cpp): 16-bit weights and gradients in full.
  const bool keep_gathered = p.zero >= 3 && p.pp > 1;
  f.weights_bytes = 2.0 * sharded(p.zero >= 3 && !keep_gathered);
  // PyTorch's FSDP keeps no 16-bit copy of its shard: the sharded fp32 parameters (the optimizer's
  // master weights) are cast at each gather, so only the gathered layers (below) are 16-bit.
  if (p.zero >= 3 && !keep_gathered && p.fsdp_impl != FsdpImpl::Megatron) f.weights_bytes = 0;
  f.gradients_bytes = p.grad_bytes_per_param() * sharded(p.zero >= 2 && !keep_gathered);
  f.optimizer_bytes = 12.0 * sharded(p.zero >= 1);

  const std::vector<int> bounds = virtual_stage_bounds(m, p);
  const int V = p.pp * p.vp;
  double rank_layers_bytes = 0, largest_layer_params = 0, largest_layer_full = 0;
  ParallelPlan no_recompute = p;
  no_recompute.recompute = Recompute::None;
  const std::vector<int> held = rank_virtual_stages(p, stage);
  for (const int vs : held) {
    for (int l = bounds[vs]; l < bounds[vs + 1]; ++l) {
      rank_layers_bytes += activation_bytes_per_layer(m, p, l);
      largest_layer_params = std::max(largest_layer_params, layer_params_per_rank(m, p, l));
      largest_layer_full = std::max(largest_layer_full, activation_bytes_per_layer(m, no_recompute, l));
    }
  }
  // Interleaved (and DualPipe): in-flight counts model chunks of (on average) one chunk's share
  // of the rank's layers.
  f.activations_bytes = rank_layers_bytes / static_cast<double>(held.size()) * in_flight_micro_batches(p, stage);
  if (p.recompute == Recompute::Full) f.activations_bytes += largest_layer_full;
  if (p.zero >= 3 && !keep_gathered) {
    f.weights_bytes += 2.0 * 2.0 * largest_layer_params;
    // One unit's unsharded gradient on its way to the reduce-scatter: in the reduce dtype and,
    // with PyTorch's FSDP, also as autograd produced it (FSDP 1 casts it, FSDP 2 copies it into
    // the reduce-scatter buffer; Megatron-Core's FSDP accumulates into its buckets directly).
    const double in_flight = p.grad_bytes_per_param() + (p.fsdp_impl == FsdpImpl::Megatron ? 0.0 : p.param_bytes_per_param());
    f.gradients_bytes += in_flight * largest_layer_params;
  }

  const double tokens = static_cast<double>(p.micro_batch) * m.seq_len / p.cp;
  const bool last = std::find(held.begin(), held.end(), V - 1) != held.end();
  if (last) {
    f.buffers_bytes += 6.0 * tokens * m.vocab / p.tp;
    // The MTP layers' activations, kept for every micro-batch in flight on this stage: under full
    // recomputation the checkpoint's two inputs (hidden states and embeddings), else the layer's
    // and the projection's 2h-wide input.
    const double sp_split = p.sp() ? p.tp : 1.0;
    const double mtp_depth = p.recompute == Recompute::Full
                                 ? 2.0 * 2.0 * tokens * m.hidden / sp_split
                                 : activation_bytes_per_layer(m, p, m.layers - 1) + 2.0 * 2.0 * tokens * m.hidden / sp_split;
    f.activations_bytes += m.mtp_layers * mtp_depth * in_flight_micro_batches(p, stage);
  }
  if (p.sp()) f.buffers_bytes += 2.0 * 2.0 * tokens * m.hidden;
  f.reserve_bytes = kReserveBytes;
  return f;
}

MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p) {
  MemoryFootprint worst = memory_per_gpu(m, p, 0);
  for (int s = 1; s < p.pp; ++s) {
    const MemoryFootprint f = memory_per_gpu(m, p, s);
    if (f.total_bytes() > worst.total_bytes()) worst = f;
  }
  return worst;
}

bool out_of_memory(const MemoryFootprint& f, double capacity_bytes) {
  return f.total_bytes() > capacity_bytes * (1.0 - kFragmentation);
}

}  // namespace stacksim::workload
