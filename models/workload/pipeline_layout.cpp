#include "models/workload/pipeline_layout.hpp"

namespace stacksim::workload {

PipelineLayout pipeline_layout(int layers, int virtual_stages) {
  const int V = virtual_stages;
  PipelineLayout out;
  if (V > 2 && layers < V && layers >= V - 2) {
    // One or two layers short: the first (and last) virtual stage holds only the embedding (and
    // the output layer and loss), Megatron's account_for_embedding/loss_in_pipeline_split
    // (Qwen3-235B's 94 layers over pp 32 x vp 3).
    out.ok = true;
    out.per_stage = 1;
    out.stage_layers.assign(V, 1);
    out.stage_layers.front() = 0;
    if (layers == V - 2) out.stage_layers.back() = 0;
    return out;
  }
  if (V <= 0 || layers < V) return out;
  out.ok = true;
  out.per_stage = (layers + V - 1) / V;
  if (layers % V == 0) return out;
  const int rest = layers - (V - 2) * out.per_stage;
  if (V > 2 && rest >= 2) {
    out.first = (rest + 1) / 2;
    out.last = rest / 2;
    return out;
  }
  out.per_stage = layers / V;
  out.stage_layers.assign(V, layers / V);
  int extra = layers % V;
  for (int v = 1; v + 1 < V && extra > 0; ++v, --extra) ++out.stage_layers[v];
  if (extra > 0) {
    ++out.stage_layers[0];
    --extra;
  }
  if (extra > 0) ++out.stage_layers[V - 1];
  return out;
}

}  // namespace stacksim::workload
