// The bundled upgrade stories (scenarios/story-*.yaml, docs/stories/): each verdict's direction
// and rough size, computed from simulations and the kernel model, never copied from a run.
#include <gtest/gtest.h>

#include "models/compute/gpu_model.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/host/host.hpp"
#include "models/workload/ops.hpp"
#include "services/compare.hpp"

using namespace stacksim;
using namespace stacksim::analysis;

namespace {

std::string story(const std::string& name) {
  return std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-" + name + ".yaml";
}

double category(const TrainingResult& r, const std::string& name) {
  for (const auto& [k, v] : r.breakdown)
    if (k == name) return v;
  ADD_FAILURE() << "no breakdown category " << name;
  return 0;
}

const std::string kFabric = "dp-oversubscribed-fabric";

// Per-GPU throughput of the fabric story on `nodes` nodes (weak scaling: one micro-batch per GPU).
double tokens_per_s_per_gpu(int nodes, const std::vector<std::string>& sets) {
  std::vector<std::string> all = sets;
  all.push_back("cluster.nodes=" + std::to_string(nodes));
  all.push_back("parallelism.dp=" + std::to_string(8 * nodes));
  all.push_back("parallelism.global_batch=" + std::to_string(8 * nodes));
  return simulate_training(load_scenario(story(kFabric), all).training, {}).tokens_per_s_per_gpu;
}

// Scaling efficiency: per-GPU throughput at the story's 32 nodes over that at one node.
double scaling_efficiency(const std::vector<std::string>& sets) {
  return tokens_per_s_per_gpu(32, sets) / tokens_per_s_per_gpu(1, sets);
}

}  // namespace

TEST(Stories, FasterGpusScaleWorseOnAnOversubscribedFabric) {
  const double h100 = scaling_efficiency({});
  const double b200 = scaling_efficiency({"hardware.gpu=B200"});
  EXPECT_LT(b200, h100 - 0.1) << "H100 " << h100 << ", B200 " << b200;  // the faster GPU loses > 10 points
  EXPECT_LT(h100, 0.9);                                                 // 4:1 already costs the H100 job
  // A non-blocking fabric restores most of it, and is worth more to the faster GPU.
  const double h100_flat = scaling_efficiency({"cluster.fabric.oversubscription=1"});
  const double b200_flat = scaling_efficiency({"hardware.gpu=B200", "cluster.fabric.oversubscription=1"});
  EXPECT_GT(h100_flat, h100 + 0.1);
  EXPECT_GT(b200_flat, b200 + 0.1);
  EXPECT_GT(b200_flat / b200, h100_flat / h100);
  // The loss is Ethernet's hashing: on InfiniBand (destination routing) the same 4:1 tree carries
  // the rings, which cross each leaf once per channel, at full rate.
  EXPECT_NEAR(scaling_efficiency({"cluster.nic=cx7-ndr400"}), h100_flat, 0.02);
}

TEST(Stories, OnTheOversubscribedFabricTheGpuUpgradeLosesMostOfItsGemmSpeedup) {
  const Comparison c =
      compare(story(kFabric), {}, {{"hardware.gpu=B200"}, {"cluster.fabric.oversubscription=1"}}, false);
  const TrainingResult& b200 = c.variants[0].result;
  const double gemm_speedup = category(c.baseline, "gemm") / category(b200, "gemm");
  EXPECT_GT(gemm_speedup, 1.8);
  EXPECT_LT(c.variants[0].speedup, 0.75 * gemm_speedup);  // the step gains far less than the GEMMs
  // Exposed gradient communication does not shrink with the GPU, so its share grows.
  EXPECT_GT(category(b200, "dp_comm") / b200.step_time_s, category(c.baseline, "dp_comm") / c.baseline.step_time_s);
  EXPECT_GT(category(c.baseline, "dp_comm"), 1.5 * category(c.variants[1].result, "dp_comm"));  // 4:1 vs 1:1
}

TEST(Stories, TensorParallelOnPcieIsExposedAndNvswitchIsMuchFaster) {
  const Comparison c = compare(story("pcie-vs-nvswitch"), {},
                               {{"cluster.node=dgx-h100"}, {"parallelism.tp=2", "parallelism.dp=4"}}, false);
  const TrainingResult& pcie = c.baseline;
  const TrainingResult& dgx = c.variants[0].result;
  EXPECT_EQ(pcie.bottleneck, "exposed tensor-parallel communication");
  EXPECT_GT(category(pcie, "tp_comm"), 0.5 * pcie.step_time_s);  // most of the PCIe step
  EXPECT_GT(c.variants[0].speedup, 2.0);                         // NVSwitch: much faster
  EXPECT_GT(category(pcie, "tp_comm"), 3 * category(dgx, "tp_comm"));
  // On the PCIe server, TP=2 with DP=4 recovers most of the gap: within 25 % of the DGX at TP=8.
  EXPECT_GT(c.variants[1].speedup, 0.75 * c.variants[0].speedup);
  EXPECT_LT(category(c.variants[1].result, "tp_comm"), 0.25 * category(pcie, "tp_comm"));
}

// The GEMM time of one layer and the output head (forward and backward) on a GPU, per the kernel
// model: the job's dominant GEMM shapes at its plan.
double gemm_seconds(const TrainingSetup& t, const std::string& gpu) {
  const compute::GpuModel model(hw::bundled_gpus().get(gpu));
  double s = 0;
  for (const auto& ops :
       {workload::layer_forward_ops(t.model, t.plan, 0), workload::layer_backward_ops(t.model, t.plan, 0),
        workload::head_forward_ops(t.model, t.plan), workload::head_backward_ops(t.model, t.plan)})
    for (const auto& op : ops)
      if (op.kind == workload::OpKind::Gemm) s += model.gemm(op.m, op.n, op.k, compute::DType::BF16, op.batch).seconds;
  return s;
}

TEST(Stories, ComputeBoundJobGainsAboutTheGemmRateRatio) {
  const Scenario s = load_scenario(story("compute-bound-upgrade"), {});
  ASSERT_EQ(s.training.plan.precision, workload::Precision::BF16);  // gemm_seconds assumes bf16 GEMMs
  const double gemm_ratio = gemm_seconds(s.training, "H100-SXM5-80GB") / gemm_seconds(s.training, "B200");
  const Comparison c = compare(story("compute-bound-upgrade"), {}, {{"hardware.gpu=B200"}}, false);
  EXPECT_GT(category(c.baseline, "gemm"), 0.6 * c.baseline.step_time_s);  // compute bound indeed
  EXPECT_GT(c.variants[0].speedup, 1.5);
  EXPECT_NEAR(c.variants[0].speedup / gemm_ratio, 1.0, 0.15)
      << "speedup " << c.variants[0].speedup << ", GEMM ratio " << gemm_ratio;
  // Paying twice the hourly price for the B200 still lowers the cost per token (speedup > 2).
  const Comparison priced = compare(
      story("compute-bound-upgrade"), {},
      {{"hardware.gpu=B200", "prices.gpu_hour_usd=" + std::to_string(2 * s.training.prices.gpu_hour_usd)}}, false);
  EXPECT_NEAR(cost_change_pct(priced.baseline, priced.variants[0].result), 100 * (2 / priced.variants[0].speedup - 1),
              1e-9);
}

TEST(Stories, AHostBoundJobGainsNothingFromFasterGpusAndMuchFromCudaGraphs) {
  // Story (f): GPT-2 small in eager PyTorch at micro-batch 1 (the configuration timed on a real
  // H100, calibration/measurements/*-torch-step-small.yaml): the GPU waits for the host's
  // launches, so a B200 or an H200 gains < 10 %, capturing the model in CUDA graphs more than
  // 1.8x, and the host's launch rate ranks first in the elasticity.
  const Comparison c =
      compare(story("host-bound"), {},
              {{"hardware.gpu=B200"}, {"hardware.gpu=H200-SXM-141GB"}, {"parallelism.cuda_graphs=full"}}, true);
  EXPECT_GT(category(c.baseline, "host_launch"), 0.5 * c.baseline.step_time_s);
  EXPECT_EQ(c.baseline.bottleneck, "waiting for the host (kernel launches and step work)");
  EXPECT_LT(c.variants[0].speedup, 1.10);
  EXPECT_LT(c.variants[1].speedup, 1.10);
  EXPECT_GT(c.variants[2].speedup, 1.8);
  ASSERT_FALSE(c.elasticity.empty());
  const VariantOutcome* best = &c.elasticity[0];
  for (const VariantOutcome& e : c.elasticity)
    if (e.speedup > best->speedup) best = &e;
  EXPECT_EQ(best->label, "host_launch");
  EXPECT_GT(best->speedup, 1.5);
}

TEST(Stories, CpuOffloadFitsA70BFineTuneOnOneNodeAtTheCostOfTheHostsAdam) {
  // Story (g): Llama 3.1 70B fully fine-tuned on one DGX A100 with FSDP. Without offload the
  // sharded fp32 masters and moments alone overflow 80 GB; offloaded (optimizer and parameters)
  // it fits, and the step pays the host's Adam: the whole model's 30 B per parameter through the
  // node's two sockets of DRAM. Offloading the parameters too costs nothing over offloading the
  // optimizer (their fetches hide under each layer's compute; no copy back). More GPUs without
  // offload or an H100 node buy much more than anything on the host side.
  const std::string path = story("offload-finetune");
  const TrainingResult plain = simulate_training(
      load_scenario(path, {"parallelism.offload_optimizer=false", "parallelism.offload_params=false"}).training, {});
  EXPECT_TRUE(plain.oom);
  const Comparison c = compare(path, {},
                               {{"parallelism.offload_params=false"},
                                {"cluster.nodes=4", "parallelism.dp=32", "parallelism.offload_optimizer=false",
                                 "parallelism.offload_params=false"},
                                {"cluster.node=dgx-h100"}},
                               true);
  EXPECT_FALSE(c.baseline.oom);
  const double params = load_scenario(path, {}).training.model.total_params();
  const double host_adam_s = params * 30.0 / (2 * 204.8e9 * kHostMemoryEfficiency);
  EXPECT_NEAR(category(c.baseline, "optimizer"), host_adam_s, 0.05 * host_adam_s);
  EXPECT_LT(c.baseline.memory_per_gpu_bytes, c.variants[0].result.memory_per_gpu_bytes);  // no shard kept
  EXPECT_GE(c.variants[0].result.step_time_s, c.baseline.step_time_s);
  EXPECT_FALSE(c.variants[1].result.oom);
  EXPECT_GT(c.variants[1].speedup, 4.0);  // four times the GPUs, and no host phase
  EXPECT_GT(c.variants[2].speedup, 2.0);
  double host_memory = 0, pcie = 0, gpu_flops = 0;
  for (const VariantOutcome& e : c.elasticity) {
    if (e.label == "host_memory") host_memory = e.speedup;
    if (e.label == "pcie") pcie = e.speedup;
    if (e.label == "gpu_flops") gpu_flops = e.speedup;
  }
  EXPECT_GT(host_memory, 1.03);  // half the host phase: 13 % of the step
  EXPECT_LT(host_memory, gpu_flops);
  EXPECT_LT(pcie, 1.01);
}
