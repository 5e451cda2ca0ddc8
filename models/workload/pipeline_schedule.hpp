// Pipeline-parallel schedules: the order in which one pipeline rank runs the forward and backward
// passes of its micro-batches (and, interleaved, of its model chunks).
//  - GPipe (Huang et al. 2019): all forwards, then all backwards.
//  - 1F1B (PipeDream-Flush, Narayanan et al. 2021): pp-stage-1 warm-up forwards, then one forward
//    and one backward alternately, then the remaining backwards.
//  - Interleaved 1F1B (Narayanan et al., SC'21 section 2.2; Megatron-LM's
//    forward_backward_pipelining_with_interleaving): each rank holds vp model chunks; micro-batches
//    advance in groups of pp; warm-up = (pp - stage - 1) * 2 + (vp - 1) * pp forwards.
// The bubble of 1F1B is (pp-1)/(m+pp-1) of the step, interleaving divides it by vp.
#pragma once
#include <vector>

namespace stacksim::workload {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved };

struct PipelineItem {
  int micro_batch = 0;
  int chunk = 0;         // model chunk on this rank (0 unless interleaved)
  bool backward = false;
  bool operator==(const PipelineItem&) const = default;
};

// Items of pipeline rank `stage` in execution order: 2 * m * vp items.
// Requires m % pp == 0 for Interleaved with vp > 1 (Megatron's rule); checked by the plan.
std::vector<PipelineItem> stage_schedule(ScheduleKind kind, int pp, int vp, int micro_batches,
                                         int stage);

// The virtual stage index of a chunk on a rank (layers are assigned in this order).
inline int virtual_stage(int chunk, int stage, int pp) { return chunk * pp + stage; }

}  // namespace stacksim::workload
