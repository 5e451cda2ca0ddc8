// The host side: loader stalls appear as data wait, a faster GPU barely helps a loader-bound job
// while more workers do; synchronous loading adds the loader time; batch copies hide under the step
// when pinned and block it when pageable; bad host input is an error.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>

#include "config/error.hpp"
#include "models/host/host.hpp"
#include "services/compare.hpp"

using namespace stacksim::analysis;

namespace {

const std::string kStory = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-dataloader-bound.yaml";

double category(const TrainingResult& r, const std::string& name) {
  for (const auto& [k, v] : r.breakdown)
    if (k == name) return v;
  return -1;
}

}  // namespace

TEST(Host, LoaderBoundStepIsTheLoaderTimeAndTheWaitShowsInTheBreakdown) {
  const Scenario s = load_scenario(kStory, {});
  const TrainingResult r = simulate_training(s.training, RunOptions{});
  // 256 / 8 = 32 samples per GPU x 0.25 CPU-s / 4 workers = 2 s per step (the GPUs need ~1 s).
  EXPECT_NEAR(r.step_time_s, 32 * 0.25 / 4, 1e-9);
  EXPECT_NEAR(category(r, "data_wait"), r.step_time_s - (r.step_time_s - category(r, "data_wait")), 1e-12);
  EXPECT_GT(category(r, "data_wait"), 0.4 * r.step_time_s);  // the GPUs need about half of it
  EXPECT_EQ(r.bottleneck, "waiting for the data loader");
}

TEST(Host, FasterGpuBarelyHelpsMoreWorkersDo) {
  const Comparison c = compare(kStory, {}, {{"hardware.gpu=B200"}, {"host.loader_workers=12"}}, false);
  EXPECT_LT(c.variants[0].speedup, 1.10);  // story (a): the GPU upgrade gains < 10 %
  EXPECT_GT(c.variants[1].speedup, 1.8);   // 3x the workers: 2 s -> max(GPU ~1 s, 0.67 s)
  EXPECT_NE(c.variants[0].reason.find("data_wait"), std::string::npos);
}

TEST(Host, SynchronousLoadingAddsTheLoaderTime) {
  // zero 0: no parameter gather at the step start for the copy to hide under; free launches: no
  // first launch to hide under it either.
  const std::vector<std::string> common{"host.loader_workers=64", "parallelism.zero=0", "host.kernel_launch=0 us"};
  std::vector<std::string> synchronous = common;
  synchronous.push_back("host.prefetch=0");
  const TrainingResult async = simulate_training(load_scenario(kStory, common).training, {});
  const TrainingResult sync = simulate_training(load_scenario(kStory, synchronous).training, {});
  // Synchronous loading is PyTorch's num_workers=0: the training process builds the batch of 32
  // samples itself, on one core; the batch's 64 MB copy (two GPUs per PCIe switch uplink) is no
  // longer hidden either.
  const double copy_s = 32 * 2e6 / (63e9 / 2);
  EXPECT_NEAR(sync.step_time_s - async.step_time_s, 32 * 0.25 + copy_s, 1e-6);
}

TEST(Host, PinnedCopiesHideUnderTheStepPageableOnesBlockAndGpusShareTheSwitchUplink) {
  // A DGX H100 (two GPUs per PCIe switch, 63 GB/s x16 links), 32 samples per GPU, an instant loader.
  const auto run = [](const std::string& sample_bytes, bool pinned) {
    return simulate_training(load_scenario(kStory, {"host.cpu_seconds_per_sample=0 s", "parallelism.zero=0",
                                                    "host.kernel_launch=0 us", "host.sample_bytes=" + sample_bytes,
                                                    std::string("host.pinned=") + (pinned ? "true" : "false")})
                                 .training,
                             {});
  };
  const double gpu_s = run("0 B", true).step_time_s;
  EXPECT_NEAR(run("2 MB", true).step_time_s, gpu_s, 1e-9 * gpu_s);  // 64 MB copied under a ~1 s step
  // 64 GB per GPU: the two GPUs of a switch share its uplink, so each copy runs at 63 / 2 GB/s,
  // not at 85 % of its own link, and outlasts the step: the rest is data wait.
  const TrainingResult big = run("2 GB", true);
  EXPECT_NEAR(big.step_time_s, 32 * 2e9 / (63e9 / 2), 1e-6);
  EXPECT_NEAR(category(big, "data_wait"), big.step_time_s - gpu_s, 1e-6);
  EXPECT_EQ(big.bottleneck, "waiting for the batch's host-to-device copy");
  // Pageable: staged at 50 % of the link (the uplink's half share), before the step's first kernel.
  const TrainingResult pageable = run("100 MB", false);
  EXPECT_NEAR(pageable.step_time_s, gpu_s + 32 * 100e6 / (63e9 * kPageableCopyEfficiency), 1e-6);
  EXPECT_NEAR(category(pageable, "data_wait"), 32 * 100e6 / (63e9 * kPageableCopyEfficiency), 1e-6);
}

TEST(Host, BadHostInputIsAnInputError) {
  EXPECT_THROW(load_scenario(kStory, {"host.loader_workers=-1"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.loader_worker=4"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.storage_read_bandwidth=0 GB/s"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.kernel_launch=-1 us"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.kernel_launch=5"}), stacksim::config::InputError);  // no unit
  EXPECT_THROW(load_scenario(kStory, {"host.sample_bytes=2 TB"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.storage_bytes_per_sample=-1 MB"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.step_overhead=-1 ms"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.step_overhead=3"}), stacksim::config::InputError);  // no unit
  EXPECT_THROW(load_scenario(kStory, {"host.step_overhead=2 min"}), stacksim::config::InputError);
}

TEST(Host, CudaGraphsTakeTheLaunchesOffAHostBoundStep) {
  // The small model of the test above at 50 us per launch: graphs of the attention and MLP blocks
  // cut the time waiting for the host, full graphs leave the step's fixed host work and a launch
  // per layer graph.
  const std::string fsdp = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const std::vector<std::string> small = {"model.layers=4",
                                          "model.hidden=1024",
                                          "model.heads=8",
                                          "model.kv_heads=8",
                                          "model.ffn_hidden=4096",
                                          "model.seq_len=512",
                                          "parallelism.micro_batch=1",
                                          "parallelism.global_batch=8",
                                          "host.kernel_launch=50 us"};
  const auto run = [&](const std::string& graphs) {
    std::vector<std::string> o = small;
    o.push_back("parallelism.cuda_graphs=" + graphs);
    return simulate_training(load_scenario(fsdp, o).training, RunOptions{});
  };
  const TrainingResult eager = run("none"), attn = run("[attn]"), full = run("full");
  EXPECT_LT(attn.step_time_s, eager.step_time_s);
  EXPECT_LT(full.step_time_s, attn.step_time_s);
  EXPECT_LT(category(full, "host_launch"), 0.5 * category(eager, "host_launch"));
  // Left: at most the step's fixed work (the first FSDP gather runs under part of it) plus about
  // one graph launch per op list (4 layers forward and backward, the embedding and the head).
  const double step_work_s = HostConfig{}.step_overhead_s;
  EXPECT_GT(category(full, "host_launch") + category(full, "dp_comm"), step_work_s);
  EXPECT_LT(category(full, "host_launch"), step_work_s + 14 * 50e-6);
}

TEST(Host, TheStepOverheadIsHostTimeOnceAStepBeforeItsFirstLaunch) {
  // A GPU-bound step (the default launch cost stays ahead of the GPU): 10 ms of step-fixed host
  // work delays the step by exactly its excess over the default, whatever the batch; it is no
  // data-loader key, and it is counted as time waiting for the host.
  const std::string fsdp = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const Scenario base = load_scenario(fsdp, {});
  const double excess_s = 10e-3 - HostConfig{}.step_overhead_s;
  EXPECT_DOUBLE_EQ(base.training.host.step_overhead_s, HostConfig{}.step_overhead_s);
  const Scenario slow = load_scenario(fsdp, {"host.step_overhead=10 ms"});
  EXPECT_FALSE(slow.training.host.enabled);
  const TrainingResult a = simulate_training(base.training, RunOptions{});
  const TrainingResult b = simulate_training(slow.training, RunOptions{});
  EXPECT_NEAR(b.step_time_s - a.step_time_s, excess_s, 1e-9);
  EXPECT_NEAR(category(b, "host_launch") - category(a, "host_launch"), excess_s, 1e-9);
}

TEST(Host, KernelLaunchAloneIsNoDataPipelineAndAFasterHostHelpsALaunchBoundStep) {
  // A small model at micro-batch 1: at 50 us per launch the GPU waits for its kernels; the
  // kernel_launch key alone simulates no data loader (no data wait), and the elasticity of the
  // host's launch rate then beats that of the GPU's FLOP/s.
  const std::string fsdp = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const std::vector<std::string> small = {"model.layers=4",
                                          "model.hidden=1024",
                                          "model.heads=8",
                                          "model.kv_heads=8",
                                          "model.ffn_hidden=4096",
                                          "model.seq_len=512",
                                          "parallelism.micro_batch=1",
                                          "parallelism.global_batch=8"};
  std::vector<std::string> slow = small;
  slow.push_back("host.kernel_launch=50 us");
  const Scenario s = load_scenario(fsdp, slow);
  EXPECT_FALSE(s.training.host.enabled);
  const TrainingResult r = simulate_training(s.training, RunOptions{});
  EXPECT_GT(category(r, "host_launch"), 0.3 * r.step_time_s);
  EXPECT_EQ(category(r, "data_wait"), 0.0);
  EXPECT_EQ(r.bottleneck, "waiting for the host (kernel launches and step work)");
  const Comparison c = compare(fsdp, slow, {}, true);
  double host = 0, flops = 0;
  for (const auto& e : c.elasticity) {
    if (e.label == "host_launch") host = e.speedup;
    if (e.label == "gpu_flops") flops = e.speedup;
  }
  EXPECT_GT(host, 1.3);
  EXPECT_GT(host, flops);
  // Free launches and no step-fixed host work: the same step without the wait.
  std::vector<std::string> free_launch = small;
  free_launch.push_back("host.kernel_launch=0 us");
  free_launch.push_back("host.step_overhead=0 ms");
  const TrainingResult f = simulate_training(load_scenario(fsdp, free_launch).training, RunOptions{});
  EXPECT_EQ(category(f, "host_launch"), 0.0);
  EXPECT_LT(f.step_time_s, r.step_time_s);
}

// The engine pipeline against the closed form (host_times) in the cases where both apply.
namespace {

stacksim::topo::ClusterConfig story_cluster() { return load_scenario(kStory, {}).training.cluster; }

HostConfig loader(double cpu_s, int workers, int prefetch) {
  HostConfig h;
  h.enabled = true;
  h.cpu_seconds_per_sample = cpu_s;
  h.loader_workers = workers;
  h.prefetch = prefetch;
  return h;
}

}  // namespace

TEST(HostPipeline, EngineEqualsTheClosedFormForALoaderWithPrefetch) {
  const auto c = story_cluster();
  for (bool batches : {true, false}) {
    for (int workers : {1, 2, 4, 8, 10, 12, 16, 32}) {
      for (double gpu_s : {0.1, 1.0, 3.0}) {
        HostConfig h = loader(0.25, workers, 2);
        h.workers_build_batches = batches;
        const double closed = std::max(gpu_s, host_times(h, c, 32).loader_s);
        const HostPipelineResult r = simulate_host_pipeline(h, c, 32, gpu_s);
        EXPECT_NEAR(r.step_s, closed, 1e-9) << workers << " workers, GPU step " << gpu_s << ", batches " << batches;
        EXPECT_NEAR(r.data_wait_s, closed - gpu_s, 1e-9);
        if (closed == gpu_s) {
          EXPECT_EQ(r.data_wait_s, 0.0);
        }  // no sub-picosecond residue
      }
    }
  }
}

TEST(HostPipeline, WithoutPrefetchTheLoaderTimeAdds) {
  const auto c = story_cluster();
  HostConfig sync = loader(0.1, 4, 0), ahead = loader(0.1, 4, 1);
  // PyTorch's DataLoader without workers: the training process builds the 16 samples, 1.6 s.
  EXPECT_NEAR(simulate_host_pipeline(sync, c, 16, 0.5).step_s, 0.5 + 16 * 0.1, 1e-9);
  EXPECT_NEAR(simulate_host_pipeline(ahead, c, 16, 0.5).step_s, 0.5, 1e-9);
  // A parallel map: the 4 workers share the batch, 16 x 0.1 / 4 = 0.4 s.
  sync.workers_build_batches = ahead.workers_build_batches = false;
  EXPECT_NEAR(simulate_host_pipeline(sync, c, 16, 0.5).step_s, 0.5 + host_times(sync, c, 16).loader_s, 1e-9);
  EXPECT_NEAR(simulate_host_pipeline(ahead, c, 16, 0.5).step_s, 0.5, 1e-9);
}

TEST(HostPipeline, StorageIsSharedByTheNodesGpus) {
  const auto c = story_cluster();
  HostConfig h = loader(0, 8, 2);
  h.storage_bytes_per_sample = 10e6;
  h.storage_read_Bps = 2e9;
  // 8 GPUs x 32 samples x 10 MB over one 2 GB/s filesystem mount: 1.28 s, not 0.16 s.
  const double closed = host_times(h, c, 32).storage_s;
  EXPECT_NEAR(closed, 8 * 32 * 10e6 / 2e9, 1e-12);
  EXPECT_NEAR(simulate_host_pipeline(h, c, 32, 0.5).step_s, closed, 1e-9);
}

TEST(HostPipeline, Deterministic) {
  const auto c = story_cluster();
  HostConfig h = loader(0.013, 3, 1);
  h.storage_bytes_per_sample = 3e6;
  const double a = simulate_host_pipeline(h, c, 29, 0.07).step_s;
  EXPECT_EQ(a, simulate_host_pipeline(h, c, 29, 0.07).step_s);
}

TEST(GpuDirectRdma, StagingThroughHostMemorySlowsInterNodeCollectives) {
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/allreduce-2x-dgx-a100.yaml";
  const auto gdr = run_collective_benchmark(load_scenario(path, {}).bench);
  const auto staged = run_collective_benchmark(load_scenario(path, {"cluster.gpudirect_rdma=false"}).bench);
  // Two GPUs and two NICs share each PCIe switch's x16 uplink, which staged traffic crosses.
  EXPECT_LT(staged.back().busbw_GBps, 0.5 * gdr.back().busbw_GBps);
}

TEST(Host, ACopyBoundJobSaysSoAndRanksPcieFirst) {
  // The story on two nodes with 3 GB samples and a fast loader: 48 GB per GPU over a switch
  // uplink shared by two GPUs (1.52 s) outlasts the ~0.53 s of compute, so a B200 buys nothing,
  // a 2x PCIe tree 2x (0.76 s, still above the compute), and the reason names the copy.
  const Comparison c = compare(
      kStory, {"host.cpu_seconds_per_sample=0.01 s", "host.sample_bytes=3 GB", "cluster.nodes=2", "parallelism.dp=16"},
      {{"hardware.gpu=B200"}}, true);
  EXPECT_EQ(c.baseline.bottleneck, "waiting for the batch's host-to-device copy");
  EXPECT_LT(c.variants[0].speedup, 1.01);
  EXPECT_NE(c.variants[0].reason.find("waiting for the batch's host-to-device copy"), std::string::npos)
      << c.variants[0].reason;
  ASSERT_FALSE(c.elasticity.empty());
  EXPECT_EQ(c.elasticity.front().label, "pcie");
  EXPECT_NEAR(c.elasticity.front().speedup, 2.0, 0.02);
}

TEST(HostPipeline, VaryingSampleCostsStallALoaderThatIsFastEnoughOnAverage) {
  const auto c = story_cluster();  // 8 GPUs, 14 cores each
  auto one_gpu = c;
  one_gpu.node.gpus_per_node = 1;
  // 10 PyTorch workers build 32-sample batches at 0.25 CPU-s per sample: 0.8 s per batch on
  // average against a 1 s GPU step. With fixed costs the loader hides entirely.
  HostConfig h = loader(0.25, 10, 1);
  EXPECT_EQ(simulate_host_pipeline(h, c, 32, 1.0).step_s, 1.0);
  // A sample's cost varying (std = 2 x mean): some batches come late, and the 8 GPUs, stepping
  // together, wait for the latest of theirs.
  h.sample_cost_cv = 2.0;
  const double late = simulate_host_pipeline(h, c, 32, 1.0).step_s;
  EXPECT_GT(late, 1.05);
  EXPECT_EQ(late, simulate_host_pipeline(h, c, 32, 1.0).step_s);        // the same draws every run
  EXPECT_LT(simulate_host_pipeline(h, one_gpu, 32, 1.0).step_s, late);  // no one else to wait for
  auto four_nodes = c;
  four_nodes.nodes = 4;  // each node's loaders draw their own costs: more batches to wait for
  EXPECT_GT(simulate_host_pipeline(h, four_nodes, 32, 1.0).step_s, late);
  // More batches handed out per worker absorb the variation.
  h.prefetch = 8;
  const double deep = simulate_host_pipeline(h, c, 32, 1.0).step_s;
  EXPECT_LT(deep, late);
  EXPECT_GE(deep, 1.0);
  // Loader-bound (0.1 s GPU step): the period is above the mean cost, 32 x 0.25 / 10 = 0.8 s, by
  // the capacity lost to workers that ran prefetch batches ahead and wait for a late one; deep
  // prefetch brings it back towards the mean.
  h.prefetch = 2;
  const double bound = simulate_host_pipeline(h, c, 32, 0.1).step_s;
  EXPECT_GT(bound, 0.8 * 0.98);
  h.prefetch = 32;
  const double deep_bound = simulate_host_pipeline(h, c, 32, 0.1).step_s;
  EXPECT_LT(deep_bound, bound);
  EXPECT_LT(deep_bound, 0.8 * 1.1);
  EXPECT_GT(deep_bound, 0.8 * 0.98);
  // A parallel map waits for each batch's slowest sample: more exposed than whole batches.
  h.prefetch = 1;
  h.workers_build_batches = false;
  EXPECT_GT(simulate_host_pipeline(h, c, 32, 1.0).step_s, late);
}

TEST(Host, TheStorageSectionIsTheStorageTheLoadersReadAndCheckpointsWrite) {
  // The what-if key: storage.read_GBps (a bare number is GB/s). 10 MB per sample read by
  // the 8 GPUs' loaders from the node's storage bounds the step; the section replaces the node
  // type's NVMe and a host.storage_read_bandwidth given as well, and the run says so.
  const std::vector<std::string> reads = {"host.cpu_seconds_per_sample=0 s", "host.storage_bytes_per_sample=10 MB",
                                          "host.storage_read_bandwidth=2 GB/s"};
  const auto with = [&](std::vector<std::string> sets, const std::string& extra) {
    sets.push_back(extra);
    return simulate_training(load_scenario(kStory, sets).training, {});
  };
  const TrainingResult slow = simulate_training(load_scenario(kStory, reads).training, {});
  EXPECT_NEAR(slow.step_time_s, 8 * 32 * 10e6 / 2e9, 1e-9);  // 2.56 GB over 2 GB/s
  const TrainingResult fast = with(reads, "storage.read_GBps=20");
  EXPECT_EQ(fast.step_time_s, with(reads, "host.storage_read_bandwidth=20 GB/s").step_time_s);
  EXPECT_LT(fast.step_time_s, 0.9 * slow.step_time_s);  // 0.128 s of reads: the GPUs' ~1.06 s bound it
  EXPECT_NE(std::find(fast.notes.begin(), fast.notes.end(), "storage.read_GBps replaces host.storage_read_bandwidth"),
            fast.notes.end());
  // Checkpoints write to it too (story e writes at 0.5 GB/s per node).
  const std::string ckpt = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-checkpoint-stalls.yaml";
  const auto step = [&](const std::string& set) {
    return simulate_training(load_scenario(ckpt, {set}).training, {}).step_time_s;
  };
  EXPECT_EQ(step("storage.write_GBps=20"), step("checkpoint.write_bandwidth=20 GB/s"));
  EXPECT_LT(step("storage.write_GBps=20"), step("storage.write_GBps=0.5"));
  EXPECT_THROW(load_scenario(kStory, {"storage.read_GBps=0"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"storage.read_GB=20"}), stacksim::config::InputError);
}

TEST(Host, OffloadedOptimizerRunsAdamAtTheNodesDramBandwidth) {
  // ZeRO-2 on one DGX H100 (2 sockets x 8 DDR5-4800 channels = 614.4 GB/s peak): offloaded, the
  // eight ranks' shards (the whole model) pass through CPU-Adam at 30 B per parameter, then each
  // 16-bit shard crosses PCIe back; the GPU's own Adam goes, and so does its state in HBM.
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const Scenario on_gpu = load_scenario(path, {"parallelism.zero=2"});
  const Scenario offloaded = load_scenario(path, {"parallelism.zero=2", "parallelism.offload_optimizer=true"});
  const TrainingResult a = simulate_training(on_gpu.training, RunOptions{});
  const TrainingResult b = simulate_training(offloaded.training, RunOptions{});
  const double params = on_gpu.training.model.total_params();
  const double host_adam_s = params * 30.0 / (2 * 307.2e9 * kHostMemoryEfficiency);
  const double copy_back_s = params / 8 * 2.0 / (63e9 / 2);  // two GPUs per PCIe switch uplink, at most
  EXPECT_GT(b.step_time_s - a.step_time_s, host_adam_s - category(a, "optimizer"));
  EXPECT_LT(b.step_time_s - a.step_time_s, host_adam_s + copy_back_s);
  EXPECT_GT(category(b, "optimizer"), host_adam_s);  // the host phase is the optimizer's
  EXPECT_NEAR(a.memory.optimizer_bytes - b.memory.optimizer_bytes, a.memory.optimizer_bytes, 1e-6);
  EXPECT_GT(a.memory.optimizer_bytes, 11.9 * params / 8);  // 12 B of Adam state per parameter
  // Twice the host's DRAM bandwidth (compare's host_memory class) halves the host Adam.
  Scenario faster = offloaded;
  faster.training.scales.host_memory = 2;
  EXPECT_NEAR(b.step_time_s - simulate_training(faster.training, RunOptions{}).step_time_s, host_adam_s / 2,
              0.05 * host_adam_s);
}

TEST(Host, OffloadedZero3StepsOnTheHostAndOffloadedShardsCrossPcieBeforeEachGather) {
  // FSDP (zero 3) on one DGX H100: offloaded, each layer's reduced gradient shard goes to the host
  // in the backward, the eight ranks' shards pass through CPU-Adam, the updated 16-bit shard comes
  // back; with offload_params it stays on the host and each gather first fetches it over PCIe.
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const auto run = [&](const std::vector<std::string>& sets) {
    return simulate_training(load_scenario(path, sets).training, RunOptions{});
  };
  const TrainingResult a = run({});
  const TrainingResult b = run({"parallelism.offload_optimizer=true"});
  const TrainingResult c = run({"parallelism.offload_optimizer=true", "parallelism.offload_params=true"});
  const double params = load_scenario(path, {}).training.model.total_params();
  const double host_adam_s = params * 30.0 / (2 * 307.2e9 * kHostMemoryEfficiency);
  const double pcie_Bps = 63e9 / 2;  // two GPUs per PCIe switch uplink, at most
  const double copy_back_s = params / 8 * 2.0 / pcie_Bps;
  const double grads_to_host_s = params / 8 * 4.0 / pcie_Bps;  // fp32, under the backward at best
  EXPECT_GT(b.step_time_s - a.step_time_s, host_adam_s - category(a, "optimizer"));
  EXPECT_LT(b.step_time_s - a.step_time_s, host_adam_s + copy_back_s + grads_to_host_s);
  EXPECT_GT(category(b, "optimizer"), host_adam_s);
  EXPECT_EQ(b.memory.optimizer_bytes, 0.0);
  // The 16-bit shard the host refreshes, beside the gathered layers (FSDP 2 keeps no 16-bit shard
  // on the GPU otherwise); with offloaded parameters only the gathered layers.
  EXPECT_NEAR(b.memory.weights_bytes - a.memory.weights_bytes, 2.0 * params / 8, 1e-3 * params);
  EXPECT_EQ(c.memory.weights_bytes, a.memory.weights_bytes);
  // Offloaded shards: no copy back, but every gather (forward, recomputation's none here, backward)
  // waits first for the shard from the host: at most 2 x the shard over PCIe per step.
  const double fetch_s = 2 * params / 8 * 2.0 / pcie_Bps;
  EXPECT_GT(c.step_time_s, b.step_time_s - copy_back_s);
  EXPECT_LT(c.step_time_s, b.step_time_s + fetch_s);
  EXPECT_GE(category(c, "dp_comm"), category(b, "dp_comm"));
  // One data-parallel rank (tp 8): nothing is reduced, and the whole gradient still goes to the
  // host after the backward for the host's Adam.
  const TrainingResult tp_only = run({"parallelism.dp=1", "parallelism.tp=8", "parallelism.zero=1",
                                      "parallelism.offload_optimizer=true", "parallelism.global_batch=6"});
  EXPECT_GT(category(tp_only, "optimizer"), host_adam_s);
  // ZeRO-3 on one data-parallel rank with offloaded parameters: nothing to gather, but every layer
  // still fetches its parameters from the host (the first fetch, at least, with nothing to hide it).
  const std::vector<std::string> one_rank = {"parallelism.dp=1", "parallelism.tp=8", "parallelism.global_batch=6",
                                             "parallelism.offload_optimizer=true"};
  std::vector<std::string> with_params = one_rank;
  with_params.push_back("parallelism.offload_params=true");
  const TrainingResult kept = run(one_rank), fetched = run(with_params);
  EXPECT_EQ(category(kept, "dp_comm"), 0.0);
  EXPECT_GT(category(fetched, "dp_comm"), 0.0);
  EXPECT_GT(category(kept, "optimizer"), host_adam_s);
  EXPECT_GT(category(fetched, "optimizer"), 0.95 * host_adam_s);  // the host Adam alone: no copy back
  EXPECT_LT(fetched.step_time_s, kept.step_time_s);  // its gradients leave layer by layer, nothing comes back
}

TEST(Host, OffloadNeedsAShardedOptimizerAndTheNodesMemoryBandwidth) {
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/fsdp-7b-8xh100.yaml";
  const auto refused = [&](const std::vector<std::string>& sets, const std::string& key, const std::string& fix) {
    try {
      load_scenario(path, sets);
      ADD_FAILURE() << "expected an InputError for " << key;
    } catch (const stacksim::config::InputError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_NE(e.fix().find(fix), std::string::npos) << e.fix();
    }
  };
  refused({"parallelism.zero=0", "parallelism.offload_optimizer=true"}, "parallelism.offload_optimizer",
          "zero: 1, 2 or 3");
  refused({"parallelism.offload_params=true"}, "parallelism.offload_params", "offload_optimizer: true");
  refused({"parallelism.zero=2", "parallelism.offload_optimizer=true", "parallelism.offload_params=true"},
          "parallelism.offload_params", "set zero: 3");
  // A node file without the CPUs' memory bandwidth: the error names the key to add.
  Scenario s = load_scenario(path, {"parallelism.zero=2", "parallelism.offload_optimizer=true"});
  s.training.cluster.node.socket_memory_Bps = 0;
  try {
    simulate_training(s.training, RunOptions{});
    FAIL() << "expected an InputError";
  } catch (const stacksim::config::InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.offload_optimizer") << e.what();
    EXPECT_NE(e.fix().find("cpu.memory_bandwidth"), std::string::npos) << e.fix();
  }
}
