// Pipeline schedules: structural properties every valid schedule must have, and the 1F1B order
// of Narayanan et al. (2021), Figure 4.
#include <gtest/gtest.h>

#include <set>

#include "models/workload/pipeline_schedule.hpp"

using namespace stacksim::workload;

namespace {

// Every (micro-batch, chunk) appears once forward and once backward, and its backward comes
// after its forward on the same rank.
void expect_complete(const std::vector<PipelineItem>& items, int m, int vp) {
  ASSERT_EQ(items.size(), static_cast<size_t>(2 * m * vp));
  std::set<std::tuple<int, int, bool>> seen;
  std::set<std::pair<int, int>> forwarded;
  for (const auto& it : items) {
    EXPECT_TRUE(seen.insert({it.micro_batch, it.chunk, it.backward}).second);
    if (!it.backward)
      forwarded.insert({it.micro_batch, it.chunk});
    else
      EXPECT_TRUE(forwarded.count({it.micro_batch, it.chunk})) << "backward before forward";
  }
}

}  // namespace

TEST(PipelineSchedule, OneFOneBWarmupIsStagesAfterThisOne) {
  // Stage 0 of 4 warms up with pp-1 = 3 forwards, then alternates F/B, then drains.
  const auto items = stage_schedule(ScheduleKind::OneFOneB, 4, 1, 8, 0);
  expect_complete(items, 8, 1);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(items[i].backward);
  EXPECT_FALSE(items[3].backward);
  EXPECT_TRUE(items[4].backward);
  EXPECT_EQ(items[4].micro_batch, 0);
  // The last stage never warms up: F0 B0 F1 B1 ...
  const auto last = stage_schedule(ScheduleKind::OneFOneB, 4, 1, 8, 3);
  for (size_t i = 0; i < last.size(); ++i) EXPECT_EQ(last[i].backward, i % 2 == 1);
}

TEST(PipelineSchedule, GPipeRunsAllForwardsFirst) {
  const auto items = stage_schedule(ScheduleKind::GPipe, 4, 1, 6, 1);
  expect_complete(items, 6, 1);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(items[i].backward);
  for (int i = 6; i < 12; ++i) EXPECT_TRUE(items[i].backward);
}

TEST(PipelineSchedule, InterleavedCoversEveryChunkAndKeepsMegatronWarmup) {
  const int pp = 4, vp = 3, m = 8;
  for (int s = 0; s < pp; ++s) {
    const auto items = stage_schedule(ScheduleKind::Interleaved, pp, vp, m, s);
    expect_complete(items, m, vp);
    // Warm-up length (pp - s - 1) * 2 + (vp - 1) * pp forwards before the first backward.
    const int warmup = (pp - s - 1) * 2 + (vp - 1) * pp;
    for (int i = 0; i < warmup; ++i) EXPECT_FALSE(items[i].backward) << "stage " << s << " item " << i;
    // The first forwards run micro-batches 0..pp-1 of chunk 0, then chunk 1.
    EXPECT_EQ(items[0].chunk, 0);
    EXPECT_EQ(items[pp].chunk, 1);
    EXPECT_EQ(items[pp].micro_batch, 0);
  }
}

TEST(PipelineSchedule, DualPipeRunsEachDirectionsHalfOnceAndPairsForwardWithBackward) {
  // DeepSeek's example shape (dualpipe.py's README: 8 ranks, 20 micro-batches) and a small one.
  for (const auto [pp, m] : {std::pair{8, 20}, std::pair{4, 8}, std::pair{4, 12}}) {
    for (int r = 0; r < pp; ++r) {
      const auto items = stage_schedule(ScheduleKind::DualPipe, pp, 1, m, r);
      std::vector<PipelineItem> passes, deferred;
      int weights = 0, pairs = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        const PipelineItem& it = items[i];
        if (it.weight) {
          // Weights run in the order their backwards deferred them (a FIFO), after them.
          ASSERT_LT(static_cast<size_t>(weights), deferred.size()) << "rank " << r;
          EXPECT_EQ(it.micro_batch, deferred[weights].micro_batch);
          EXPECT_EQ(it.chunk, deferred[weights].chunk);
          ++weights;
          continue;
        }
        // Chunk = direction: micro-batches [0, m/2) go forward, [m/2, m) the reverse way.
        EXPECT_EQ(it.chunk, it.micro_batch < m / 2 ? 0 : 1);
        passes.push_back(it);
        if (it.defer_weight) deferred.push_back(it);
        if (it.overlap_next) {
          // A forward of one direction beside a backward of the other.
          ASSERT_LT(i + 1, items.size());
          EXPECT_FALSE(it.backward);
          EXPECT_TRUE(items[i + 1].backward);
          EXPECT_NE(items[i + 1].chunk, it.chunk);
          ++pairs;
        }
      }
      expect_complete(passes, m / 2, 2);  // m/2 micro-batches through each of the two chunks
      EXPECT_EQ(static_cast<size_t>(weights), deferred.size()) << "every deferred wgrad runs";
      // The steady state (step 4) has two pairs per iteration but one on the middle ranks' first.
      const int half = pp / 2, half_rank = std::min(r, pp - 1 - r);
      const int main_steps = m / 2 - pp + half_rank + 1;
      EXPECT_EQ(pairs, 2 * main_steps - (half_rank == half - 1 ? 1 : 0) + (half - half_rank - 1)) << "rank " << r;
    }
  }
  EXPECT_THROW(stage_schedule(ScheduleKind::DualPipe, 3, 1, 12, 0), std::invalid_argument);  // pp odd
  EXPECT_THROW(stage_schedule(ScheduleKind::DualPipe, 4, 1, 6, 0), std::invalid_argument);   // m < 2 pp
  EXPECT_THROW(stage_schedule(ScheduleKind::DualPipe, 4, 2, 8, 0), std::invalid_argument);   // vp > 1
}

TEST(PipelineSchedule, RejectsBadShapes) {
  EXPECT_THROW(stage_schedule(ScheduleKind::OneFOneB, 0, 1, 4, 0), std::invalid_argument);
  EXPECT_THROW(stage_schedule(ScheduleKind::OneFOneB, 4, 1, 4, 4), std::invalid_argument);
}

TEST(PipelineSchedule, PairedOneFOneBWarmsUpOneMoreAndPairsEachSteadyForwardWithTheNextBackward) {
  // Megatron-Core's EP all-to-all overlap: one extra warm-up forward, then F(i + w) beside B(i),
  // never a forward beside its own micro-batch's backward.
  for (const auto& [kind, pp, vp] :
       {std::tuple{ScheduleKind::OneFOneB, 1, 1}, std::tuple{ScheduleKind::Interleaved, 4, 2}}) {
    const int m = 8;
    for (int s = 0; s < pp; ++s) {
      const auto plain = stage_schedule(kind, pp, vp, m, s);
      const auto items = stage_schedule(kind, pp, vp, m, s, true);
      expect_complete(items, m, vp);
      size_t warmup = 0, plain_warmup = 0;
      while (!items[warmup].backward) ++warmup;
      while (!plain[plain_warmup].backward) ++plain_warmup;
      EXPECT_EQ(warmup, std::min(plain_warmup + 1, static_cast<size_t>(m * vp)));  // forwards before the first backward
      int pairs = 0;
      for (size_t i = 0; i + 1 < items.size(); ++i) {
        if (!items[i].overlap_next) continue;
        ++pairs;
        EXPECT_FALSE(items[i].backward);
        EXPECT_TRUE(items[i + 1].backward);
        EXPECT_FALSE(items[i].micro_batch == items[i + 1].micro_batch && items[i].chunk == items[i + 1].chunk);
      }
      // Every forward after the warm-up pairs: the leading forwards are the warm-up and the first pair's.
      EXPECT_EQ(pairs, m * vp - static_cast<int>(warmup) + 1);
    }
  }
  EXPECT_THROW(stage_schedule(ScheduleKind::GPipe, 4, 1, 8, 0, true), std::invalid_argument);
}
