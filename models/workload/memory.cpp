#include "models/workload/memory.hpp"

#include <algorithm>

#include "models/workload/ops.hpp"

namespace stacksim::workload {

MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p) {
  MemoryFootprint f;
  double params = 0;
  for (int s = 0; s < p.pp; ++s) params = std::max(params, stage_params_per_rank(m, p, s));
  const double dp = p.dp;
  f.weights_bytes = 2.0 * params / (p.zero >= 3 ? dp : 1.0);
  f.gradients_bytes = 2.0 * params / (p.zero >= 2 ? dp : 1.0);
  f.optimizer_bytes = 12.0 * params / (p.zero >= 1 ? dp : 1.0);
  if (p.zero >= 3) f.weights_bytes += 2.0 * 2.0 * layer_params_per_rank(m, p, m.layers - 1);

  const double s = static_cast<double>(m.seq_len) / p.cp, b = p.micro_batch, h = m.hidden, t = p.tp;
  const double mlp_scale = static_cast<double>(m.ffn_hidden) / (4.0 * h) * (m.mlp == Mlp::SwiGlu ? 1.5 : 1.0);
  double per_layer;
  if (p.recompute == Recompute::Full) {
    per_layer = 2.0 * s * b * h / (p.sp() ? t : 1.0);
  } else {
    const double attention_part = 15.0, mlp_part = 19.0 * mlp_scale;  // of Korthikanti's 34
    if (p.sp())
      per_layer = s * b * h * (attention_part + mlp_part) / t;
    else
      per_layer = s * b * h * (10.0 * (attention_part + mlp_part) / 34.0 + 24.0 * (attention_part + mlp_part) / 34.0 / t);
    // Unfused attention keeps its s x s scores, softmax output and dropout mask: 5*a*s^2*b / t.
    if (m.attention == AttentionImpl::Unfused && p.recompute == Recompute::None)
      per_layer += 5.0 * m.heads * s * static_cast<double>(m.seq_len) * b / t;
  }
  const double in_flight_layers =
      p.pp > 1 ? m.layers * (p.vp > 1 ? 1.0 + (p.pp - 1.0) / (p.pp * p.vp) : 1.0) : m.layers / 1.0;
  // Without pipelining only one micro-batch's activations live at a time.
  f.activations_bytes = per_layer * (p.pp > 1 ? std::min<double>(in_flight_layers, m.layers * 1.0 *
                                                                  std::min(p.num_micro_batches(), p.pp) / p.pp)
                                              : m.layers);
  f.buffers_bytes = 4.0 * s * b * m.vocab / t + (p.zero < 3 ? p.dp_bucket_bytes * 2 : 0.0);
  f.reserve_bytes = 2.5e9;
  return f;
}

bool out_of_memory(const MemoryFootprint& f, double capacity_bytes) { return f.total_bytes() > capacity_bytes; }

}  // namespace stacksim::workload
