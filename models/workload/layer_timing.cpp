#include "models/workload/layer_timing.hpp"

#include <stdexcept>

namespace stacksim::workload {

LayerTiming time_layer(const StepProgram& program, int layer, const topo::Cluster& cluster,
                       const coll::CommTuning& tuning) {
  if (layer < 0 || layer >= static_cast<int>(program.layers.size()))
    throw std::invalid_argument("time_layer: no layer " + std::to_string(layer));
  // One stage, one micro-batch, and just enough data-parallel ranks to form the expert groups
  // that hold the first replica (see expert_span);
  // nothing to reduce or update.
  StepProgram one;
  one.tp = program.tp;
  one.cp = program.cp;
  one.ep = program.ep;
  one.experts_folded = program.experts_folded;
  one.dp = expert_replicas(program);
  one.pp = one.vp = 1;
  one.micro_batches = 1;
  one.zero = 0;
  one.overlap_grad_reduce = one.overlap_param_gather = false;
  one.host_launch_s = program.host_launch_s;
  LayerProgram lp = program.layers[layer];
  lp.param_bytes = lp.grad_bytes = lp.expert_param_bytes = lp.expert_grad_bytes = 0.0;
  one.layers = {lp};
  one.layers.front().backward.clear();
  const ReplayOptions quiet;
  LayerTiming t;
  t.layer = layer;
  t.forward_s = replay_step(one, cluster, tuning, quiet).step_time_s;
  one.layers = {lp};
  t.backward_s = replay_step(one, cluster, tuning, quiet).step_time_s - t.forward_s;
  return t;
}

}  // namespace stacksim::workload
