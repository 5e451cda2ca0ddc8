#include "models/workload/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace stacksim::workload {
namespace {

// Megatron's mapping of the k-th forward (or backward) item of a rank to (micro-batch, chunk).
PipelineItem interleaved_item(int k, int pp, int vp, bool backward) {
  const int group = k / (pp * vp);
  const int in_group = k % (pp * vp);
  int chunk = in_group / pp;
  if (backward) chunk = vp - 1 - chunk;
  return {group * pp + in_group % pp, chunk, backward};
}

}  // namespace

std::vector<PipelineItem> stage_schedule(ScheduleKind kind, int pp, int vp, int m, int stage) {
  if (pp < 1 || vp < 1 || m < 1 || stage < 0 || stage >= pp)
    throw std::invalid_argument("stage_schedule: bad pipeline shape");
  std::vector<PipelineItem> items;
  items.reserve(static_cast<size_t>(2 * m * vp));
  if (kind == ScheduleKind::GPipe || pp == 1) {
    // With one stage every schedule degenerates to forward-then-backward per micro-batch order;
    // GPipe keeps all forwards first.
    if (kind == ScheduleKind::GPipe) {
      for (int c = 0; c < vp; ++c)
        for (int mb = 0; mb < m; ++mb) items.push_back({mb, c, false});
      for (int c = vp - 1; c >= 0; --c)
        for (int mb = 0; mb < m; ++mb) items.push_back({mb, c, true});
      return items;
    }
  }
  if (kind == ScheduleKind::OneFOneB || vp == 1) {
    const int warmup = std::min(pp - stage - 1, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) items.push_back({f, 0, false});
    while (f < m) {
      items.push_back({f++, 0, false});
      items.push_back({b++, 0, true});
    }
    while (b < m) items.push_back({b++, 0, true});
    return items;
  }
  // Interleaved.
  const int total = m * vp;
  const int warmup = std::min((pp - stage - 1) * 2 + (vp - 1) * pp, total);
  int f = 0, b = 0;
  for (; f < warmup; ++f) items.push_back(interleaved_item(f, pp, vp, false));
  while (f < total) {
    items.push_back(interleaved_item(f++, pp, vp, false));
    items.push_back(interleaved_item(b++, pp, vp, true));
  }
  while (b < total) items.push_back(interleaved_item(b++, pp, vp, true));
  return items;
}

}  // namespace stacksim::workload
