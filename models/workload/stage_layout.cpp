// Parameters per rank and how layers fall on pipeline stages (declared in ops.hpp): what the
// memory model, the optimizer step and the replay's stage programs count per rank.
#include <algorithm>

#include "models/workload/ops.hpp"

namespace stacksim::workload {

double layer_expert_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer) {
  if (!m.is_moe_layer(layer)) return 0;
  return m.expert_params() * (static_cast<double>(m.moe.experts) / p.ep) / p.expert_tp();
}

double layer_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer) {
  // Split by heads over tp: Q (or Q up), K/V (or KV up), output projection and biases; MLA's
  // down projections and latent norms are replicated, as are the layer norms and a sparse-attention
  // indexer (whole on every rank).
  double replicated = m.indexer_params();
  if (m.is_mla()) {
    const MlaConfig& a = m.mla;
    replicated += static_cast<double>(m.hidden) * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) +
                  static_cast<double>(a.q_lora_rank) + a.kv_lora_rank;
  }
  const double attention = (m.attention_params() - replicated) / p.tp + replicated;
  double params = attention + 2.0 * m.norm_params();
  if (m.is_moe_layer(layer))
    params +=
        layer_expert_params_per_rank(m, p, layer) + m.expert_params() * m.moe.shared_experts / p.tp + m.router_params();
  else
    params += m.dense_mlp_params() / p.tp;
  return params;
}

double embedding_params_per_rank(const ModelConfig& m, const ParallelPlan& p) {
  return static_cast<double>(m.vocab) * m.hidden / p.tp;
}

std::vector<int> virtual_stage_bounds(const ModelConfig& m, const ParallelPlan& p) {
  const int V = p.pp * p.vp;
  if (!p.stage_layers.empty()) {
    std::vector<int> bounds{0};
    for (int l : p.stage_layers) bounds.push_back(std::min(m.layers, bounds.back() + l));
    bounds.resize(V + 1, m.layers);
    bounds.back() = m.layers;  // counts that do not add up (only in plans check_plan rejects) end here
    return bounds;
  }
  if (p.embedding_in_split || p.loss_in_split) {  // Megatron-Core's account_for_*_in_pipeline_split
    const int per = (m.layers + p.embedding_in_split + p.loss_in_split) / V;
    std::vector<int> bounds{0};
    for (int v = 0; v < V; ++v) {
      const int n = per - (v == 0 && p.embedding_in_split) - (v == V - 1 && p.loss_in_split);
      bounds.push_back(std::min(m.layers, bounds.back() + std::max(0, n)));
    }
    bounds.back() = m.layers;  // a remainder (only in plans check_plan rejects) goes to the last stage
    return bounds;
  }
  const int first = p.first_stage_layers, last = p.last_stage_layers;
  const int middle = std::max(1, V - (first > 0) - (last > 0));
  const int per = (m.layers - first - last) / middle;
  std::vector<int> bounds{0};
  for (int v = 0; v < V; ++v) {
    int n = per;
    if (v == 0 && first > 0) n = first;
    if (v == V - 1 && last > 0) n = last;
    bounds.push_back(std::min(m.layers, bounds.back() + n));
  }
  bounds.back() = m.layers;  // a remainder (only in plans check_plan rejects) goes to the last stage
  return bounds;
}

int max_layers_per_chunk(const ModelConfig& m, const ParallelPlan& p) {
  const std::vector<int> bounds = virtual_stage_bounds(m, p);
  int most = 0;
  for (size_t v = 0; v + 1 < bounds.size(); ++v) most = std::max(most, bounds[v + 1] - bounds[v]);
  return most;
}

std::vector<int> rank_virtual_stages(const ParallelPlan& p, int rank) {
  if (p.dualpipe()) return {rank, p.pp - 1 - rank};
  std::vector<int> out;
  for (int c = 0; c < p.vp; ++c) out.push_back(c * p.pp + rank);
  return out;
}

namespace {

template <class PerLayer>
double stage_sum(const ModelConfig& m, const ParallelPlan& p, int stage, PerLayer per_layer, bool with_embeddings) {
  const std::vector<int> bounds = virtual_stage_bounds(m, p);
  const int V = p.pp * p.vp;
  double params = 0;
  for (const int vs : rank_virtual_stages(p, stage)) {
    for (int l = bounds[vs]; l < bounds[vs + 1]; ++l) params += per_layer(l);
    if (!with_embeddings) continue;
    if (vs == 0) params += embedding_params_per_rank(m, p);
    if (vs == V - 1) {
      params += m.norm_params() + mtp_params_per_rank(m, p);
      if (has_output_layer_copy(m, p)) params += embedding_params_per_rank(m, p);
    }
  }
  return params;
}

}  // namespace

double stage_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage) {
  return stage_sum(
      m, p, stage, [&](int l) { return layer_params_per_rank(m, p, l); }, true);
}

double stage_expert_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage) {
  return stage_sum(
      m, p, stage, [&](int l) { return layer_expert_params_per_rank(m, p, l); }, false);
}

Recompute layer_recompute(const ModelConfig& m, const ParallelPlan& p, int layer) {
  if (p.recompute != Recompute::Full || p.recompute_layers <= 0) return p.recompute;
  const std::vector<int> bounds = virtual_stage_bounds(m, p);
  const auto chunk = std::upper_bound(bounds.begin(), bounds.end(), layer) - 1;
  return layer - *chunk < p.recompute_layers ? Recompute::Full : Recompute::None;
}

int dense_shard_ranks(const ParallelPlan& p) { return p.shard_size > 0 ? p.shard_size : p.dp * p.cp; }
// The expert data-parallel group: tp*cp*dp ranks over etp*ep (= dp*cp/ep when etp = tp).
int expert_shard_ranks(const ParallelPlan& p) { return std::max(1, p.dp * p.cp * (p.tp / p.expert_tp()) / p.ep); }

}  // namespace stacksim::workload
