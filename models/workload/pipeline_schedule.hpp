// Pipeline-parallel schedules: the order in which one pipeline rank runs the forward and backward
// passes of its micro-batches (and, interleaved, of its model chunks).
//  - GPipe (Huang et al. 2019): all forwards, then all backwards.
//  - 1F1B (PipeDream-Flush, Narayanan et al. 2021): pp-stage-1 warm-up forwards, then one forward
//    and one backward alternately, then the remaining backwards.
//  - Interleaved 1F1B (Narayanan et al., SC'21 section 2.2; Megatron-LM's
//    forward_backward_pipelining_with_interleaving): each rank holds vp model chunks; micro-batches
//    advance in groups of pp; warm-up = (pp - stage - 1) * 2 + (vp - 1) * pp forwards.
//  - DualPipe (DeepSeek-V3 report, section 3.2.1; deepseek-ai/DualPipe's dualpipe.py, whose steps
//    1-8 this follows): micro-batches enter from both ends; rank r holds stage r of the forward-
//    direction pipeline and stage pp-1-r of the reverse one (chunk = direction), half of the
//    micro-batches each way. In the steady state a forward chunk of one direction and a backward
//    chunk of the other run together (their communication hides under each other's compute);
//    some backward chunks defer their weight gradients (zero bubble) to fill the bubbles. Needs
//    pp even and m even, m >= 2 pp.
// The bubble of 1F1B is (pp-1)/(m+pp-1) of the step, interleaving divides it by vp; DualPipe's is
// (pp/2 - 1)(F&B + B - 3W) (the report's Table 2).
#pragma once
#include <memory>
#include <vector>

namespace stacksim::workload {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, DualPipe };

struct PipelineItem {
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank (0 unless interleaved; DualPipe: direction)
  bool backward = false;
  bool defer_weight = false;  // backward: input gradients only; a later `weight` item runs the wgrads
  bool weight = false;        // the deferred weight gradients of (micro_batch, chunk)'s backward
  bool overlap_next = false;  // runs concurrently with the next item (DualPipe's F&B chunks)
  bool operator==(const PipelineItem&) const = default;
};

// Items of pipeline rank `stage` in execution order: 2 * m * vp items (DualPipe: 2 m, plus one
// `weight` item per deferring backward). `pair_forward_backward` (1F1B, interleaved or one stage:
// Megatron-Core's overlap_moe_expert_parallel_comm): one more warm-up forward, then every steady-
// state forward runs beside the backward after it (overlap_next).
// Requires m % pp == 0 for Interleaved with vp > 1 (Megatron's rule), and for DualPipe pp even,
// vp 1, m even and m >= 2 pp; checked by the plan.
std::vector<PipelineItem> stage_schedule(ScheduleKind kind, int pp, int vp, int micro_batches, int stage,
                                         bool pair_forward_backward = false);

// Every rank's stage_schedule, built once per (kind, pp, vp, m) and shared (thread-safe): the fast
// tier's walks of many plans of one pipeline shape reuse it (building took as long as walking).
std::shared_ptr<const std::vector<std::vector<PipelineItem>>> rank_schedules(ScheduleKind kind, int pp, int vp,
                                                                             int micro_batches);

// The virtual stage index of a chunk on a rank (layers are assigned in this order).
inline int virtual_stage(int chunk, int stage, int pp) { return chunk * pp + stage; }

}  // namespace stacksim::workload
