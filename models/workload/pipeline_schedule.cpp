#include "models/workload/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

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

// dualpipe.py's DualPipe.step for one rank, item by item. Phase 0 is the forward direction on
// the first half of the ranks and the reverse direction on the second half (phase ^ second half).
std::vector<PipelineItem> dualpipe_schedule(int pp, int m, int rank) {
  if (pp % 2 != 0 || m % 2 != 0 || m < 2 * pp)
    throw std::invalid_argument("stage_schedule: DualPipe needs pp even, m even and m >= 2 pp");
  const int half = pp / 2, half_rank = std::min(rank, pp - 1 - rank), per_direction = m / 2;
  const int second_half = rank >= half ? 1 : 0;
  const bool middle = half_rank == half - 1;
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::vector<PipelineItem> items, deferred;  // deferred: backwards whose wgrads wait (FIFO)
  size_t next_deferred = 0;
  auto forward = [&](int phase, bool overlap_next = false) {
    const int d = phase ^ second_half;
    PipelineItem it{d * per_direction + next_f[d]++, d, false};
    it.overlap_next = overlap_next;
    items.push_back(it);
  };
  auto backward = [&](int phase, bool zero_bubble = false) {
    const int d = phase ^ second_half;
    PipelineItem it{d * per_direction + next_b[d]++, d, true};
    it.defer_weight = zero_bubble;
    items.push_back(it);
    if (zero_bubble) deferred.push_back(it);
  };
  auto weight = [&] {
    PipelineItem it = deferred.at(next_deferred++);
    it.defer_weight = false;
    it.weight = true;
    items.push_back(it);
  };
  for (int i = 0; i < (half - half_rank - 1) * 2; ++i) forward(0);                         // step 1: nF0
  for (int i = 0; i < half_rank + 1; ++i) forward(0), forward(1);                          // step 2: nF0F1
  for (int i = 0; i < half - half_rank - 1; ++i) backward(1, true), weight(), forward(1);  // step 3: nB1W1F1
  for (int i = 0; i < per_direction - pp + half_rank + 1; ++i) {                           // step 4 (main): nF0B1F1B0
    if (i == 0 && middle) {
      forward(0), backward(1);  // the middle ranks' first pair runs in sequence (a smaller bubble)
    } else {
      forward(0, true), backward(1);
    }
    forward(1, true), backward(0);
  }
  for (int i = 0; i < half - half_rank - 1; ++i) backward(1), forward(1, true), backward(0);  // step 5: nB1F1B0
  bool zero_bubble = false;  // step 6: nB1B0, the second half with deferred weights
  const int step6 = half_rank + 1;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && half_rank % 2 == 1) zero_bubble = true;
    backward(1, zero_bubble);
    if (i == step6 / 2 && half_rank % 2 == 0) zero_bubble = true;
    backward(0, zero_bubble);
  }
  for (int i = 0; i < half - half_rank - 1; ++i) weight(), backward(0, true);  // step 7: nWB0
  for (int i = 0; i < half_rank + 1; ++i) weight();                            // step 8: nW
  return items;
}

}  // namespace

std::vector<PipelineItem> stage_schedule(ScheduleKind kind, int pp, int vp, int m, int stage,
                                         bool pair_forward_backward) {
  if (pp < 1 || vp < 1 || m < 1 || stage < 0 || stage >= pp)
    throw std::invalid_argument("stage_schedule: bad pipeline shape");
  if (pair_forward_backward && (kind == ScheduleKind::GPipe || kind == ScheduleKind::DualPipe))
    throw std::invalid_argument("stage_schedule: only 1F1B pairs its forwards and backwards");
  if (kind == ScheduleKind::DualPipe) {
    if (vp != 1) throw std::invalid_argument("stage_schedule: DualPipe holds its two chunks itself (vp 1)");
    return dualpipe_schedule(pp, m, stage);
  }
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
  const int extra = pair_forward_backward ? 1 : 0;
  if (kind == ScheduleKind::OneFOneB || vp == 1) {
    const int warmup = std::min(pp - stage - 1 + extra, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) items.push_back({f, 0, false});
    while (f < m) {
      PipelineItem fwd{f++, 0, false};
      fwd.overlap_next = pair_forward_backward;
      items.push_back(fwd);
      items.push_back({b++, 0, true});
    }
    while (b < m) items.push_back({b++, 0, true});
    return items;
  }
  // Interleaved.
  const int total = m * vp;
  const int warmup = std::min((pp - stage - 1) * 2 + (vp - 1) * pp + extra, total);
  int f = 0, b = 0;
  for (; f < warmup; ++f) items.push_back(interleaved_item(f, pp, vp, false));
  while (f < total) {
    PipelineItem fwd = interleaved_item(f++, pp, vp, false);
    fwd.overlap_next = pair_forward_backward;
    items.push_back(fwd);
    items.push_back(interleaved_item(b++, pp, vp, true));
  }
  while (b < total) items.push_back(interleaved_item(b++, pp, vp, true));
  return items;
}

std::shared_ptr<const std::vector<std::vector<PipelineItem>>> rank_schedules(ScheduleKind kind, int pp, int vp,
                                                                             int micro_batches) {
  using RankItems = std::vector<std::vector<PipelineItem>>;
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, int>, std::shared_ptr<const RankItems>> cache;
  const auto key = std::make_tuple(static_cast<int>(kind), pp, vp, micro_batches);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto items = std::make_shared<RankItems>(pp);
  for (int r = 0; r < pp; ++r) (*items)[r] = stage_schedule(kind, pp, vp, micro_batches, r);
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, std::move(items)).first->second;
}

}  // namespace stacksim::workload
