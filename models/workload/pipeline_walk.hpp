// 1F1B and interleaved 1F1B for the fast tier, evaluated from each rank's item order
// (stage_schedule, Megatron's order) with each (rank, chunk)'s item times, as dualpipe_walk.hpp
// does for DualPipe. The replay's rules without the engine: a rank runs its items in order; a
// forward waits for the previous virtual stage's forward of its micro-batch, a backward for the
// next virtual stage's backward (the last one for its own forward), each sent across; a blocking
// send holds its rank until it is through. The walk reaches what the closed form's per-stage
// periods miss: the warm-up's and cool-down's waits at each chunk boundary, and a heavier chunk
// (the loss head on the last stage) stalling the stages that wait on its micro-batches.
#pragma once
#include <vector>

#include "models/workload/pipeline_schedule.hpp"

namespace stacksim::workload {

// One rank's item durations (seconds) per chunk, alone; `first_forward_extra`: what the first
// micro-batch's forward of a chunk adds (FSDP's kept gathers, which start once its input is in).
struct PipelineRankTimes {
  std::vector<double> forward, backward, first_forward_extra;
};

// Each rank's end (its last item, and its send if blocking), from the step's first item at 0; past
// eight rounds of pp micro-batches extended linearly from two shorter walks (periodic after the fill).
// `send_s[r]`: one micro-batch's activations or gradients between ranks r and r + 1 (mod pp),
// either way. `kind`: OneFOneB or Interleaved (m % pp == 0 when vp > 1: the plan's check).
std::vector<double> pipeline_rank_ends(ScheduleKind kind, int pp, int vp, int m,
                                       const std::vector<PipelineRankTimes>& times, const std::vector<double>& send_s,
                                       bool blocking_sends);

}  // namespace stacksim::workload
