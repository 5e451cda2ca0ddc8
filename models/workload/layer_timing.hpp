// Time of one transformer layer for one micro-batch, forward and backward, as a per-layer
// profiler or a paper's "time per layer" table reports it (Korthikanti et al. 2022, Table 4):
// the layer's kernels and its tensor/context/expert-parallel collectives on the real links,
// with recomputation in backward per the plan; no pipeline, data-parallel or optimizer work.
#pragma once
#include "models/collectives/collective.hpp"
#include "models/workload/replay.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::workload {

struct LayerTiming {
  int layer = 0;  // the layer timed (0-based)
  double forward_s = 0.0;
  double backward_s = 0.0;  // includes the recomputed forward, if any
};

// Replays layer `layer` of `program` alone on the first tp*cp*ep ranks of `cluster`: once
// forward only, once forward + backward (backward = the difference).
LayerTiming time_layer(const StepProgram& program, int layer, const topo::Cluster& cluster,
                       const coll::CommTuning& tuning);

}  // namespace stacksim::workload
