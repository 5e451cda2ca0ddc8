// The uneven pipeline layout policy shared by the case builder and the plan search.
#include <gtest/gtest.h>

#include <numeric>

#include "models/workload/pipeline_layout.hpp"

using stacksim::workload::pipeline_layout;

TEST(PipelineLayout, EvenSplitNeedsNoLayout) {
  const auto l = pipeline_layout(64, 16);
  EXPECT_TRUE(l.ok);
  EXPECT_EQ(l.per_stage, 4);
  EXPECT_EQ(l.first, 0);
  EXPECT_TRUE(l.stage_layers.empty());
}

TEST(PipelineLayout, FirstAndLastStagesShareTheRest) {
  // Llama 3 405B: 126 layers over 16 stages, 14 middle stages of 8, 7 on the first and the last.
  const auto l = pipeline_layout(126, 16);
  EXPECT_EQ(l.per_stage, 8);
  EXPECT_EQ(l.first, 7);
  EXPECT_EQ(l.last, 7);
  // An odd rest leaves the last stage (it also holds the output layer) the smaller part.
  const auto odd = pipeline_layout(61, 16);
  EXPECT_EQ(odd.first, 3);
  EXPECT_EQ(odd.last, 2);
}

TEST(PipelineLayout, EveryStageCountedWhenNoFirstLastSplitFits) {
  for (const auto& [layers, stages] : {std::pair{61, 32}, std::pair{10, 8}, std::pair{61, 2}}) {
    const auto l = pipeline_layout(layers, stages);
    ASSERT_TRUE(l.ok);
    ASSERT_EQ(static_cast<int>(l.stage_layers.size()), stages);
    EXPECT_EQ(std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0), layers);
    for (int c : l.stage_layers) EXPECT_GE(c, 1);
  }
  // Extra layers go to the middle stages, then the first, then the last.
  EXPECT_EQ(pipeline_layout(10, 8).stage_layers, (std::vector<int>{1, 2, 2, 1, 1, 1, 1, 1}));
  EXPECT_EQ(pipeline_layout(61, 2).stage_layers, (std::vector<int>{31, 30}));
}

TEST(PipelineLayout, OneOrTwoLayersShortLeaveTheEndStagesToEmbeddingAndLoss) {
  // Megatron's account_for_embedding/loss_in_pipeline_split: Qwen3-235B's 94 layers over 96
  // virtual stages (pp 32 x vp 3): the first and last hold no transformer layer.
  const auto l = pipeline_layout(94, 96);
  ASSERT_TRUE(l.ok);
  ASSERT_EQ(l.stage_layers.size(), 96u);
  EXPECT_EQ(l.stage_layers.front(), 0);
  EXPECT_EQ(l.stage_layers.back(), 0);
  EXPECT_EQ(std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0), 94);
  EXPECT_EQ(pipeline_layout(7, 8).stage_layers, (std::vector<int>{0, 1, 1, 1, 1, 1, 1, 1}));
}

TEST(PipelineLayout, FewerLayersThanStagesIsNoLayout) {
  EXPECT_FALSE(pipeline_layout(5, 8).ok);
  EXPECT_FALSE(pipeline_layout(8, 0).ok);
}
