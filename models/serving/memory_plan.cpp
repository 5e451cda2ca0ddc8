// Per-GPU memory of a serving instance: weights, activation workspace, and the KV cache that is
// left (vLLM's profile run does the same: gpu_memory_utilization x HBM, less the weights and the
// peak activations of a max_num_batched_tokens step, goes to KV blocks).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "config/error.hpp"
#include "models/serving/serving.hpp"
#include "sim/units.hpp"

namespace stacksim::serving {
namespace {

// CUDA context, cuBLAS/NCCL workspaces and allocator slack outside the profiled tensors.
// ASSUMPTION (vLLM reports 0.5-2 GiB of 'non-torch' memory on H100 runs).
constexpr double kRuntimeReserveBytes = 1.0 * (1ull << 30);
// CUDA graph memory pools of the captured decode batch sizes. ASSUMPTION (vLLM logs ~0.3-1 GiB).
constexpr double kCudaGraphPoolBytes = 0.5 * (1ull << 30);

std::string gib(double bytes) {
  std::ostringstream os;
  os.precision(3);
  os << bytes / (1ull << 30) << " GiB";
  return os.str();
}

}  // namespace

MemoryPlan plan_memory(const ServingConfig& config, const workload::ModelConfig& m, const hw::GpuSpec& gpu) {
  const Parallelism& par = config.parallel;
  const double tp = par.tp, pp = par.pp, dp = par.dp;
  const double w = dtype_bytes(config.weights_dtype);
  const double layers_gpu = std::ceil(static_cast<double>(m.layers) / pp);
  // One layer's weights on a GPU: attention and dense MLP split over tp; routed experts over ep
  // ranks and, inside an expert, over the rest of the stage's tp x dp GPUs.
  const double attention_w = config.attention_weights_dtype ? dtype_bytes(*config.attention_weights_dtype) : w;
  const double attention = m.attention_params() / tp * attention_w / w;  // in weights_dtype-equivalent params
  double per_layer = attention;
  double moe_layers = 0;
  for (int l = 0; l < m.layers; ++l) moe_layers += m.is_moe_layer(l) ? 1 : 0;
  const double dense_share = (m.layers - moe_layers) / m.layers;
  per_layer += dense_share * m.dense_mlp_params() / tp;
  if (m.is_moe()) {
    const double etp = par.ep > 1 ? std::max(1.0, tp * dp / par.ep) : tp;
    const double experts = m.moe.experts / static_cast<double>(par.ep) * m.expert_params() / etp;
    const double shared = m.moe.shared_experts * m.expert_params() / tp;
    per_layer += (1 - dense_share) * (experts + shared + m.router_params());
  }
  MemoryPlan p;
  p.hbm_bytes = gpu.memory_bytes;
  // Embedding and LM head stay 16-bit; with pp > 1 they sit on different stages (one counted).
  const double embed = m.embedding_params() / tp * 2 / (pp > 1 && !m.tied_embeddings ? 2 : 1);
  const double norms = layers_gpu * 2 * m.norm_params() * 2;  // two 16-bit norms per layer
  p.weights_bytes = layers_gpu * per_layer * w + embed + norms;
  // Peak activations of the largest step: hidden states, q/k/v, MLP intermediate, logits.
  const double tokens = static_cast<double>(config.max_num_batched_tokens) / dp;
  const double width = 4.0 * m.hidden + static_cast<double>(m.q_width() + 2 * m.kv_width()) / tp +
                       3.0 * std::max<double>(m.ffn_hidden, m.moe.expert_ffn_hidden * std::max(1, m.moe.top_k)) / tp;
  p.workspace_bytes = tokens * width * 2 + config.max_num_seqs * static_cast<double>(m.vocab) / tp * 4 +
                      kRuntimeReserveBytes + (config.cuda_graphs ? kCudaGraphPoolBytes : 0);
  const double usable = gpu.memory_bytes * config.gpu_memory_utilization;
  const double free_bytes = usable - p.weights_bytes - p.workspace_bytes;
  const std::string where = gpu.name + " (" + gib(gpu.memory_bytes) + " x gpu_memory_utilization " +
                            std::to_string(config.gpu_memory_utilization).substr(0, 4) + ")";
  if (p.weights_bytes >= usable)
    throw config::InputError(config.origin, 0, "serving.tp",
                             "the weights need " + gib(p.weights_bytes) + " per GPU, more than " + where + " allows",
                             "raise tp or pp, use a smaller weights_dtype (fp8, fp4, int4), or a GPU with more memory");
  p.kv_bytes = std::max(0.0, free_bytes) * config.kv_free_memory_fraction;
  // KV per token on one GPU: its layers, its KV heads (replicated when tp > kv_heads), MLA's latent.
  const double kvb = dtype_bytes(config.kv_dtype);
  const double per_layer_kv = (m.is_mla() ? static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * kvb
                                          : 2 * std::max(1.0, std::ceil(m.kv_heads / tp)) * m.head_dim * kvb) +
                              m.indexer_key_bytes();
  p.kv_bytes_per_token = layers_gpu * per_layer_kv;
  const double tokens_cap = std::floor(p.kv_bytes / p.kv_bytes_per_token) * dp;
  p.kv_blocks = static_cast<long long>(std::floor(tokens_cap / config.block_size_tokens));
  p.kv_capacity_tokens = p.kv_blocks * config.block_size_tokens;
  if (p.kv_blocks < 1)
    throw config::InputError(config.origin, 0, "serving.gpu_memory_utilization",
                             "no room for a single KV block: weights " + gib(p.weights_bytes) + " + workspace " +
                                 gib(p.workspace_bytes) + " per GPU leave " + gib(std::max(0.0, free_bytes)) + " of " +
                                 where,
                             "raise gpu_memory_utilization or tp/pp, lower max_num_batched_tokens or max_num_seqs, "
                             "or use smaller weights/KV dtypes");
  return p;
}

}  // namespace stacksim::serving
