#include "models/workload/dualpipe_walk.hpp"

#include <algorithm>

#include "models/workload/pipeline_schedule.hpp"

namespace stacksim::workload {

std::vector<double> dualpipe_rank_ends(int pp, int m, const std::vector<DualPipeRankTimes>& times,
                                       const std::vector<double>& send_s) {
  const auto schedule = rank_schedules(ScheduleKind::DualPipe, pp, 1, m);
  const std::vector<std::vector<PipelineItem>>& items = *schedule;
  // When a micro-batch's forward (backward) output of a position is at the position that needs
  // it: the next position's forward (the previous position's backward); -1 while not yet.
  std::vector<double> forward_in(static_cast<size_t>(m) * pp, -1.0), backward_in = forward_in;
  const auto at = [pp](int mb, int position) { return static_cast<size_t>(mb) * pp + position; };
  const auto position_of = [pp](const PipelineItem& it, int r) { return it.chunk == 0 ? r : pp - 1 - r; };
  // The rank a position sends to: the forward direction's next position is rank r + 1.
  const auto send = [&](int r, int to) { return to < 0 || to >= pp ? 0.0 : send_s[std::min(r, to)]; };
  const auto input_ready = [&](const PipelineItem& it, int r) {
    if (it.weight) return 0.0;
    const int p = position_of(it, r);
    if (!it.backward) return p == 0 ? 0.0 : forward_in[at(it.micro_batch, p - 1)];
    return p == pp - 1 ? forward_in[at(it.micro_batch, p)] : backward_in[at(it.micro_batch, p + 1)];
  };
  const auto length = [&](const PipelineItem& it, int r) {
    const DualPipeRankTimes& t = times[r];
    const int c = it.chunk;
    if (it.weight) return t.weight[c];
    if (!it.backward) return t.forward[c];
    return it.defer_weight ? t.backward_input[c] : t.backward[c];
  };
  // Records the item's output where it is needed; returns when its blocking send is through.
  const auto finish = [&](const PipelineItem& it, int r, double end) {
    if (it.weight) return end;
    const int p = position_of(it, r), step = it.chunk == 0 ? 1 : -1;  // rank of position p + 1
    if (!it.backward) {
      if (p == pp - 1) return forward_in[at(it.micro_batch, p)] = end;  // its own backward's input
      return forward_in[at(it.micro_batch, p)] = end + send(r, r + step);
    }
    if (p == 0) return end;
    return backward_in[at(it.micro_batch, p)] = end + send(r, r - step);
  };
  std::vector<size_t> next(pp, 0);
  std::vector<double> clock(pp, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < pp; ++r)
      while (next[r] < items[r].size()) {
        const PipelineItem& a = items[r][next[r]];
        const bool paired = a.overlap_next && next[r] + 1 < items[r].size();
        const PipelineItem& b = paired ? items[r][next[r] + 1] : a;
        const double in_a = input_ready(a, r), in_b = paired ? input_ready(b, r) : 0.0;
        if (in_a < 0 || in_b < 0) break;  // waits for a neighbour: go on with the other ranks
        const double start = std::max({clock[r], in_a, in_b});
        // dualpipe.py pairs a forward with the other direction's backward.
        const bool fb = paired && !a.backward && b.backward && !b.defer_weight && b.chunk == 1 - a.chunk;
        const double end = start + (fb ? times[r].pair[a.chunk] : length(a, r) + (paired ? length(b, r) : 0.0));
        clock[r] = finish(a, r, end);
        if (paired) clock[r] = std::max(clock[r], finish(b, r, end));
        next[r] += paired ? 2 : 1;
        progress = true;
      }
  }
  return clock;
}

}  // namespace stacksim::workload
