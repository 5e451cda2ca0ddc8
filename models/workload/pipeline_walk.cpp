#include "models/workload/pipeline_walk.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace stacksim::workload {
namespace {

// Each rank's end of the walk of all m micro-batches.
std::vector<double> walk(ScheduleKind kind, int pp, int vp, int m, const std::vector<PipelineRankTimes>& times,
                         const std::vector<double>& send_s, bool blocking_sends) {
  const auto schedule = rank_schedules(kind, pp, vp, m);
  const std::vector<std::vector<PipelineItem>>& items = *schedule;
  const int stages = pp * vp;  // virtual stages: chunk c of rank r is c * pp + r
  // When a micro-batch's forward (backward) output of a virtual stage is at the rank that needs
  // it; -1 while not yet.
  std::vector<double> forward_out(static_cast<size_t>(m) * stages, -1.0), backward_out = forward_out;
  const auto at = [stages](int mb, int v) { return static_cast<size_t>(mb) * stages + v; };
  std::vector<size_t> next(pp, 0);
  std::vector<double> clock(pp, 0.0);
  std::vector<std::vector<char>> seen(pp, std::vector<char>(vp, 0));
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < pp; ++r)
      while (next[r] < items[r].size()) {
        const PipelineItem& it = items[r][next[r]];
        const int v = virtual_stage(it.chunk, r, pp);
        double in = 0;
        if (!it.backward && v > 0) in = forward_out[at(it.micro_batch, v - 1)];
        if (it.backward)
          in = v == stages - 1 ? forward_out[at(it.micro_batch, v)] : backward_out[at(it.micro_batch, v + 1)];
        if (in < 0) break;  // waits for a neighbour: go on with the other ranks
        const PipelineRankTimes& t = times[r];
        double length = it.backward ? t.backward[it.chunk] : t.forward[it.chunk];
        if (!it.backward && !seen[r][it.chunk]) {
          seen[r][it.chunk] = 1;
          length += t.first_forward_extra[it.chunk];
        }
        const double end = std::max(clock[r], in) + length;
        double send = 0;
        if (!it.backward) {
          // The last virtual stage's output is its own backward's input, no send.
          send = v == stages - 1 ? 0.0 : send_s[r];
          forward_out[at(it.micro_batch, v)] = end + send;
        } else if (v > 0) {
          send = send_s[(r + pp - 1) % pp];
          backward_out[at(it.micro_batch, v)] = end + send;
        }
        clock[r] = blocking_sends ? end + send : end;
        ++next[r];
        progress = true;
      }
  }
  for (int r = 0; r < pp; ++r)
    if (next[r] < items[r].size())
      throw std::logic_error("pipeline walk: rank " + std::to_string(r) + " waits for an input no rank produces");
  return clock;
}

}  // namespace

std::vector<double> pipeline_rank_ends(ScheduleKind kind, int pp, int vp, int m,
                                       const std::vector<PipelineRankTimes>& times, const std::vector<double>& send_s,
                                       bool blocking_sends) {
  // Past the fill every round of pp micro-batches repeats the same items with the same waits: a
  // long step is walked at two depths well past it (eight and four rounds, as the replay bounds
  // its own) and extended linearly, so a step of thousands of micro-batches costs a short one.
  const int m2 = 8 * pp, m1 = m2 - 4 * pp;
  if (m <= m2) return walk(kind, pp, vp, m, times, send_s, blocking_sends);
  const std::vector<double> a = walk(kind, pp, vp, m1, times, send_s, blocking_sends);
  std::vector<double> b = walk(kind, pp, vp, m2, times, send_s, blocking_sends);
  const double k = static_cast<double>(m - m2) / (m2 - m1);
  for (int r = 0; r < pp; ++r) b[r] += k * (b[r] - a[r]);
  return b;
}

}  // namespace stacksim::workload
