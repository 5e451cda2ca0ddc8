#include "models/workload/memory.hpp"

#include <algorithm>
#include <cmath>

#include "models/workload/ops.hpp"

namespace stacksim::workload {

double activation_bytes_per_layer(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const double s = static_cast<double>(m.seq_len) / p.cp, b = p.micro_batch, h = m.hidden, t = p.tp;
  const double sb = s * b;
  const double sp_split = p.sp() ? t : 1.0;
  const Recompute rc = layer_recompute(m, p, layer);
  if (rc == Recompute::Full) return 2.0 * sb * h / sp_split;
  if (rc == Recompute::Op) return op_checkpoint_saved_bytes(m, p, layer);
  const bool fp8 = p.precision == Precision::FP8, moe = m.is_moe_layer(layer);
  // Selective recomputation of a module drops what it would have stored (full returned above).
  const auto recomputed = [&](unsigned module) { return p.recomputes(module); };

  // Korthikanti et al.'s 34 sbh bytes per layer, by where they live. `replicated` (split by tp only
  // with sequence parallelism): the two norms' inputs (4 sbh), their outputs feeding QKV and the
  // MLP or router (4 sbh), the dropout masks (2 sbh).
  double replicated = 10.0 * sb * h;
  if (m.is_mla())
    replicated += 2.0 * sb * (2.0 * m.mla.q_lora_rank + 2.0 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  const double q = static_cast<double>(m.q_width()), k = static_cast<double>(m.kv_width());
  const double v = static_cast<double>(m.kv_heads) * m.v_head_dim(), o = static_cast<double>(m.attn_out_width());
  // `split` over tp: Q, K, V and the output projection's input, the MLPs' fc1 outputs and
  // activation outputs. `unsplit`: routed tokens a rank holds whole.
  double split = 2.0 * sb * (q + k + v + o);
  double unsplit = 0;
  // Under FP8, Transformer Engine keeps each linear's input as its 1-byte copy: the QKV input,
  // the dense MLP's fc1 input, the output projection's and every fc2's; an MoE layer's router
  // keeps its 16-bit input (its shared experts add a 1-byte copy of it), and the routed experts'
  // fc1 input is the dispatched tokens' 1-byte copy.
  if (fp8) {
    replicated -= (moe ? (m.moe.shared_experts > 0 ? 0.0 : 1.0) : 2.0) * sb * h;
    split -= sb * o;
  }
  if (recomputed(kRecomputeLayernorm))  // the norm outputs still stored in 16 bit
    replicated -= (fp8 ? (moe ? 2.0 : 0.0) : 4.0) * sb * h;
  if (m.is_mla() && recomputed(kRecomputeMlaUpProj)) split -= 2.0 * sb * (q + k + v);

  // Per element entering an fc2: the fc1 output (1 or 2 elements of 2 bytes) and the fc2 input.
  const double fc2_input_bytes = fp8 ? 1.0 : 2.0;
  const double per_ffn_element = (m.mlp == Mlp::SwiGlu ? 4.0 : 2.0) + fc2_input_bytes;
  if (!moe) {
    if (!recomputed(kRecomputeMlp))
      split += per_ffn_element * sb * m.ffn_hidden;
    else if (fp8)
      replicated += sb * h;  // the checkpoint keeps its 16-bit input, not fc1's copy
  } else {
    if (m.moe.shared_experts > 0 && !recomputed(kRecomputeSharedExperts))
      split += per_ffn_element * sb * m.moe.shared_experts * m.moe.expert_ffn_hidden;
    if (!recomputed(kRecomputeMoe)) {
      const double routed = sb * m.moe.top_k * m.moe.load_factor();
      // fp8_swiglu_cache: the SwiGLU input's two elements at 1 byte each (DeepSeek-V3).
      const double swiglu_cache_saving = p.fp8_swiglu_cache ? 2.0 : 0.0;
      const double routed_ffn_element =
          per_ffn_element - swiglu_cache_saving - (recomputed(kRecomputeMoeAct) ? fc2_input_bytes : 0.0);
      if (p.experts_folded()) {  // whole experts on this rank's own sequence-parallel tokens
        unsplit += (fp8 ? 1.0 : 2.0) * routed / sp_split * h +
                   routed_ffn_element * routed / sp_split * m.moe.expert_ffn_hidden;
      } else {  // experts split over tp see the routed tokens of all tp ranks
        unsplit += (fp8 ? 1.0 : 2.0) * routed * h;
        split += routed_ffn_element * routed * m.moe.expert_ffn_hidden;
      }
    }
  }
  double scores = 0;
  if (m.attention == AttentionImpl::Unfused && !recomputed(kRecomputeCoreAttn))
    scores = 5.0 * m.heads * s * m.seq_len * b;
  return replicated / sp_split + split / t + scores / t + unsplit;
}

double logits_bytes(const ModelConfig& m, const ParallelPlan& p, double tokens) {
  const double vocab = static_cast<double>(m.vocab) / p.tp;
  if (!p.chunked_loss) return 6.0 * tokens * vocab;  // the logits and their fp32 copy for the loss
  // Liger's chunk: about the hidden states' size in logits (inc_factor = ceil(V / h)).
  const double inc_factor = std::ceil(static_cast<double>(m.vocab) / m.hidden);
  const double chunk = std::min(tokens, std::exp2(std::ceil(std::log2(std::max(1.0, std::ceil(tokens / inc_factor))))));
  return p.param_bytes_per_param() * chunk * vocab;
}

int in_flight_micro_batches(const ParallelPlan& p, int stage) {
  const int m = p.num_micro_batches();
  // ep_overlap's pairs start a forward before the backward beside it has freed its activations.
  const int paired = p.ep_overlap ? 1 : 0;
  if (p.pp == 1) return std::min(m, 1 + paired);
  if (p.schedule == Schedule::GPipe) return m;
  // DualPipe: PP + 1 chunks' activations at the peak (the DeepSeek-V3 report's Table 2).
  if (p.dualpipe()) return p.pp + 1;
  if (p.vp > 1) return std::min(m * p.vp, 2 * (p.pp - stage - 1) + (p.vp - 1) * p.pp + 1 + paired);
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
  // Under autocast (never with zero 3) the model's weights are fp32, and a forward holds its 16-bit
  // copies (saved for the backward's GEMMs) besides.
  f.weights_bytes =
      p.autocast ? (p.weight_bytes_per_param() + 2.0) * all : 2.0 * sharded(p.zero >= 3 && !keep_gathered);
  // PyTorch's FSDP keeps no 16-bit copy of its shard: the sharded fp32 parameters (the optimizer's
  // master weights) are cast at each gather, so only the gathered layers (below) are 16-bit.
  if (p.zero >= 3 && !keep_gathered && p.fsdp_impl != FsdpImpl::Megatron) f.weights_bytes = 0;
  // With the fp32 masters on the host (offload_optimizer), the GPU keeps the 16-bit shard the
  // host's Adam copies back; with offload_params that shard stays on the host too.
  if (p.zero >= 3 && p.offload_optimizer) f.weights_bytes = p.offload_params ? 0.0 : 2.0 * sharded(!keep_gathered);
  f.gradients_bytes = p.grad_bytes_per_param() * sharded(p.zero >= 2 && !keep_gathered);
  // Offloaded (ZeRO-Offload), the master weights and moments are in host memory.
  f.optimizer_bytes = p.offload_optimizer ? 0.0 : p.optimizer_bytes_per_param() * sharded(p.zero >= 1);

  const std::vector<int> bounds = virtual_stage_bounds(m, p);
  const int V = p.pp * p.vp;
  double rank_layers_bytes = 0, largest_layer_params = 0, largest_layer_full = 0, largest_layer_stored = 0;
  ParallelPlan no_recompute = p;
  no_recompute.recompute = Recompute::None;
  const std::vector<int> held = rank_virtual_stages(p, stage);
  for (const int vs : held) {
    for (int l = bounds[vs]; l < bounds[vs + 1]; ++l) {
      const double stored = activation_bytes_per_layer(m, p, l);
      rank_layers_bytes += stored;
      largest_layer_params = std::max(largest_layer_params, layer_params_per_rank(m, p, l));
      largest_layer_stored = std::max(largest_layer_stored, stored);
      largest_layer_full = std::max(largest_layer_full, activation_bytes_per_layer(m, no_recompute, l));
    }
  }
  // Interleaved (and DualPipe): in-flight counts model chunks of (on average) one chunk's share
  // of the rank's layers.
  f.activations_bytes = rank_layers_bytes / static_cast<double>(held.size()) * in_flight_micro_batches(p, stage);
  // Offloaded, the GPU holds the layer being computed and the one being copied.
  if (p.offload_activations) f.activations_bytes = std::min(f.activations_bytes, 2.0 * largest_layer_stored);
  // The layer being recomputed holds its whole working set again during its backward.
  if (p.recompute == Recompute::Full || p.recompute == Recompute::Op) f.activations_bytes += largest_layer_full;
  if (p.zero >= 3 && !keep_gathered) {
    f.weights_bytes += 2.0 * 2.0 * largest_layer_params;
    // One unit's unsharded gradient on its way to the reduce-scatter: in the reduce dtype and,
    // with PyTorch's FSDP, also as autograd produced it (FSDP 1 casts it, FSDP 2 copies it into
    // the reduce-scatter buffer; Megatron-Core's FSDP accumulates into its buckets directly).
    const double in_flight =
        p.grad_bytes_per_param() + (p.fsdp_impl == FsdpImpl::Megatron ? 0.0 : p.param_bytes_per_param());
    f.gradients_bytes += in_flight * largest_layer_params;
  }

  const double tokens = static_cast<double>(p.micro_batch) * m.seq_len / p.cp;
  const bool last = std::find(held.begin(), held.end(), V - 1) != held.end();
  if (last) {
    f.buffers_bytes += logits_bytes(m, p, tokens);
    // The MTP layers' activations, kept for every micro-batch in flight on this stage: under full
    // recomputation the checkpoint's two inputs (hidden states and embeddings), else the layer's
    // and the projection's 2h-wide input.
    const double sp_split = p.sp() ? p.tp : 1.0;
    const double mtp_depth = p.recompute == Recompute::Full ? 2.0 * 2.0 * tokens * m.hidden / sp_split
                                                            : activation_bytes_per_layer(m, p, m.layers - 1) +
                                                                  2.0 * 2.0 * tokens * m.hidden / sp_split;
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
