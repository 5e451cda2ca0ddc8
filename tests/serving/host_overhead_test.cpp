// The engine's host work per step: a fixed part plus a cost per sequence on each attention-DP
// rank's own executor loop, hidden behind the GPU step only where the engine overlaps them.
#include <gtest/gtest.h>

#include "models/serving/step_cost.hpp"
#include "tests/serving/fixtures.hpp"

namespace stacksim::serving {
namespace {

using testing::dgx_h100;
using testing::llama3_70b;
using testing::tp8_fp8;

StepShape decodes(long long seqs) {
  StepShape s;
  s.decode_seqs = s.decode_query_tokens = s.logits_tokens = seqs;
  s.decode_context_tokens = seqs * 1000.0;
  return s;
}

double host_seconds(const StepCost& c) { return c.by_category[static_cast<size_t>(StepCategory::Host)]; }

TEST(HostOverhead, SerialHostWorkAddsFixedPlusPerSequenceOfOneRank) {
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.engine.host_overlapped = false;
  c.engine.step_overhead_cuda_graph_s = 1e-3;
  c.engine.per_sequence_overhead_s = 29e-6;
  const auto cluster = std::make_shared<topo::Cluster>(topo::build_cluster(h.cluster));
  const auto tuning = coll::tuning_for(h.cluster.node, h.cluster.nic);
  StepCostModel tp8(c, c.parallel, llama3_70b(), h.gpu, cluster, tuning, 0);
  EXPECT_NEAR(host_seconds(tp8.cost(decodes(1536))), 1e-3 + 1536 * 29e-6, 1e-12);
  // Attention DP 8: each rank's loop handles ceil(1536 / 8) = 192 sequences, in parallel.
  Parallelism dp8;
  dp8.tp = 1;
  dp8.dp = 8;
  StepCostModel ranks(c, dp8, llama3_70b(), h.gpu, cluster, tuning, 0);
  EXPECT_NEAR(host_seconds(ranks.cost(decodes(1536))), 1e-3 + 192 * 29e-6, 1e-12);
}

TEST(HostOverhead, OverlappedHostWorkShowsOnlyBeyondTheGpuStep) {
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.engine.host_overlapped = true;
  c.engine.step_overhead_cuda_graph_s = 0;
  c.engine.per_sequence_overhead_s = 100e-6;
  const auto cluster = std::make_shared<topo::Cluster>(topo::build_cluster(h.cluster));
  StepCostModel model(c, c.parallel, llama3_70b(), h.gpu, cluster, coll::tuning_for(h.cluster.node, h.cluster.nic), 0);
  // Batch 1: 100 us of host work hides behind a GPU step of milliseconds.
  const StepCost one = model.cost(decodes(1));
  EXPECT_EQ(host_seconds(one), 0);
  EXPECT_DOUBLE_EQ(one.seconds, one.gpu_seconds);
  // 4096 sequences: 410 ms of host work outlasts the GPU step, which then lasts the host's time.
  const StepCost many = model.cost(decodes(4096));
  ASSERT_LT(many.gpu_seconds, 4096 * 100e-6);
  EXPECT_NEAR(many.seconds, 4096 * 100e-6, 1e-12);
}

TEST(HostOverhead, PipelineStagesServeTheirMicroBatchesOnOneHostLoop) {
  // pp 8: each rank's loop prepares all 8 micro-batches in flight in turn, so a micro-batch's step
  // lasts at least 8 host steps, even where the engine overlaps host and GPU work.
  const ServingHardware h = dgx_h100();
  ServingConfig c = tp8_fp8();
  c.engine.host_overlapped = true;
  c.engine.step_overhead_cuda_graph_s = 5e-3;
  c.engine.per_sequence_overhead_s = 0;
  const auto cluster = std::make_shared<topo::Cluster>(topo::build_cluster(h.cluster));
  Parallelism pp8;
  pp8.tp = 1;
  pp8.pp = 8;
  StepCostModel model(c, pp8, llama3_70b(), h.gpu, cluster, coll::tuning_for(h.cluster.node, h.cluster.nic), 0);
  const StepCost one = model.cost(decodes(1));
  ASSERT_LT(one.gpu_seconds, 40e-3);
  EXPECT_NEAR(one.seconds, 40e-3, 1e-12);
  // A serial engine adds its own host step to the GPU pass where that is longer.
  c.engine.host_overlapped = false;
  c.engine.step_overhead_cuda_graph_s = 1e-3;
  StepCostModel serial(c, pp8, llama3_70b(), h.gpu, cluster, coll::tuning_for(h.cluster.node, h.cluster.nic), 0);
  const StepCost s1 = serial.cost(decodes(1));
  ASSERT_GT(s1.gpu_seconds, 8e-3);
  EXPECT_NEAR(s1.seconds, s1.gpu_seconds + 1e-3, 1e-12);
}

}  // namespace
}  // namespace stacksim::serving
