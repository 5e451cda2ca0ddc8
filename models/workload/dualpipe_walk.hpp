// DualPipe's pipeline for the fast tier, evaluated from its item order (stage_schedule, which
// follows dualpipe.py) rather than the report's bubble formula, which that order does not reach
// (replay_test's DualPipeMatchesItsScheduleEvaluatedDirectly). The replay's rules, without the
// engine: each rank runs its items in order; a forward waits for the previous position's forward
// of its micro-batch, a backward for the next position's backward; an F&B pair starts once both
// inputs are in; sends block (dualpipe.py's _commit_and_wait_comm): a rank's next item starts
// once the previous item's activations or gradients have reached the neighbour. Position j of
// the reverse direction is rank pp-1-j.
#pragma once
#include <vector>

namespace stacksim::workload {

// One rank's item durations (seconds), per chunk c (the direction: 0 forward, 1 reverse).
struct DualPipeRankTimes {
  double forward[2] = {0, 0};         // a forward of one micro-batch, alone
  double backward[2] = {0, 0};        // a full backward (input and weight gradients), alone
  double backward_input[2] = {0, 0};  // a deferring backward: the input gradients only
  double weight[2] = {0, 0};          // its deferred weight gradients
  double pair[2] = {0, 0};            // the forward of chunk c beside the backward of chunk 1 - c
};

// Each rank's end (its last item and its sends done), from the step's first item at 0.
// `send_s[r]`: one micro-batch's activations or gradients between ranks r and r + 1 (either
// way). Needs pp even, m even, m >= 2 pp (the plan's check).
std::vector<double> dualpipe_rank_ends(int pp, int m, const std::vector<DualPipeRankTimes>& times,
                                       const std::vector<double>& send_s);

}  // namespace stacksim::workload
