// The host side of a training step: CPU data-loader workers, storage and host-to-device copies
// feeding the GPUs.
//
// The loaders are simulated on the engine for one representative node. Resources: the node's CPU
// cores (capacity = cores, in core-seconds per second) and its storage read bandwidth. Activities,
// per GPU of the node:
//   load  a batch on one loader worker (workers_build: batches, PyTorch's DataLoader: batch i on
//         worker i mod W, batches delivered in order), or a sample, or a chunk of samples for big
//         batches, on whichever worker is free (samples: a parallel map such as tf.data or DALI,
//         the workers sharing each batch); it holds one core for cpu_seconds_per_sample per sample
//         and reads storage_bytes_per_sample; workers beyond the node's cores share them fairly;
//   step  the GPU's step time from the replay, a pure delay, once every GPU of the node has its
//         batch loaded (data-parallel ranks step together: each step's collectives wait for all).
// Prefetch is the queue between loader and step. batches: prefetch batches per worker are handed
// out ahead of the step that takes them (PyTorch's prefetch_factor), and prefetch 0 is PyTorch's
// num_workers=0, the training process building each batch itself after the previous step;
// samples: batch b may load once step b-prefetch-1 has finished (0: synchronous loading).
// A sample's cost may vary (sample_cost_cv: standard deviation over mean of its CPU time and
// bytes read, lognormal, drawn per sample from a fixed hash so runs repeat bit for bit; a batch or
// chunk varies as the sum of its samples): a loader fast enough on average then still stalls a
// step now and then, the more GPUs wait for each other and the fewer batches are prefetched. Each
// node then draws its own costs and the step waits for every GPU's batch, over up to 32 nodes (256
// GPUs with 8 per node); more nodes add stragglers of their own that the period does not include.
// The batch's copy host -> device (sample_bytes per sample) is part of the step: the replay runs
// it over the PCIe route from the GPU's CPU socket, where it shares the switch uplink with the
// neighbour GPUs' copies and the GPU's x16 link with its NIC traffic (workload/replay.hpp,
// StepProgram::batch_copy_bytes). Pinned copies run on a copy engine (85 % of the x16 link,
// nvbandwidth's pinned ratio) under the step; pageable ones are staged by a CPU memcpy (50 %) and
// block the GPU's stream before the step's first kernel.
// A few steps reach steady state (hundreds with varying costs); the mean period of the measured
// steps is the step time, and its excess over the GPU step is the data wait.
//
//   host:
//     cpu_seconds_per_sample: 0.02   # read + decode + augment + tokenise, one core
//     loader_workers: 8              # per GPU
//     workers_build: batches         # batches (PyTorch DataLoader, default) or samples (tf.data, DALI)
//     prefetch: 2                    # batches per worker ahead (samples: batches ahead; 0 = synchronous)
//     storage_bytes_per_sample: 1 MB # read from the node's storage
//     storage_read_bandwidth: 5 GB/s # optional: overrides the node's storage (e.g. a network FS)
//     sample_bytes: 64 KB            # copied host -> device per sample
//     pinned: true
//     sample_cost_cv: 0.5            # a sample's cost varies: std / mean (default 0, fixed)
//     kernel_launch: 41 us           # host time per kernel the training process launches
//     step_overhead: 2.3 ms          # host time per step besides the launches
//
// kernel_launch is the other half of the host: each rank's training process launches its kernels
// from one CPU thread (the framework's per-op dispatch), ahead of the GPU unless the GPU finishes
// kernels faster than they are launched or the process waits for the GPU (a dropless MoE layer
// reads its token counts back; workload/ops.hpp, Op::host_sync). The replay (workload/replay.hpp)
// charges what the GPU then waits as host_launch. The cost is per kernel the replay counts, with
// the framework ops around it (views, autocast casts, autograd nodes, gradient accumulation: ~3
// eager ops per kernel at 15.9 us each). step_overhead is the host work of a step that is not a
// kernel launch (the training loop's Python, the optimizer's bookkeeping, zero_grad); a loop that
// synchronises once per step (the loss read back for logging, a gradient-norm check) does it with
// the GPU idle, so the replay puts it before each stage's first launch (StepProgram::host_step_s).
// Both defaults are measured on an H100 host with PyTorch 2.11: benchmarks/host_fit.py replays the
// seven host-bound eager GPT steps of calibration/measurements/*-torch-step-small.yaml (12 and 4
// layers, 173-493 kernels a step, micro-batch 1-16) and minimises their squared relative errors:
// 41 us per kernel and 2.3 ms per step (6.0 % MAPE over them; the two micro-batch-1 rows alone,
// as a line, gave 34.8 us and 3.45 ms). The H200 VM's faster host fits 36 us and 0.9 ms. Lower with
// CUDA graphs (parallelism.cuda_graphs; a graph replays at 1.42 us per kernel, measured there),
// higher on a slower host CPU: set them to what host_fit.py gives for the job's own host.
#pragma once
#include "config/yaml.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

struct HostConfig {
  bool enabled = false;
  double cpu_seconds_per_sample = 0;
  int loader_workers = 8;
  int prefetch = 2;
  double storage_bytes_per_sample = 0;
  double storage_read_Bps = 0;  // 0 = the node's
  double sample_bytes = 0;
  bool pinned = true;
  bool workers_build_batches = true;  // PyTorch's DataLoader; false: a parallel map of samples
  double sample_cost_cv = 0;          // a sample's loading cost: standard deviation over mean (0 = fixed)
  double kernel_launch_s = 41e-6;     // host time per kernel (above, measured); not a data-loader key
  double step_overhead_s = 2.3e-3;    // host time per step besides launches (above, measured); not one either
};

HostConfig parse_host(const config::Node& host);

// PCIe efficiency of host <-> device copies (nvbandwidth's pinned and pageable ratios).
inline constexpr double kPinnedCopyEfficiency = 0.85;
inline constexpr double kPageableCopyEfficiency = 0.5;
// Sustained fraction of a server CPU's DRAM peak that a streaming kernel (STREAM triad, DeepSpeed's
// vectorised CPU-Adam) reaches with every core busy. Assumption: no measurement in the sources;
// STREAM results on two-socket servers commonly land at 70-85 % of the channels' peak.
inline constexpr double kHostMemoryEfficiency = 0.8;

// Closed form of the loader's steady state (fixed costs), kept as the oracle the engine model is
// tested against.
struct HostTimes {
  double loader_s = 0, storage_s = 0;
};
HostTimes host_times(const HostConfig& h, const topo::ClusterConfig& cluster, double samples_per_gpu);

struct HostPipelineResult {
  double step_s = 0;        // steady-state step period of the node's GPUs
  double data_wait_s = 0;   // step_s - gpu_step_s: the GPU waits for its batch
  int nodes_simulated = 1;  // nodes whose loaders were simulated (all of them, or the first 32)
};

// Simulates the host pipeline of one node on the engine around GPU steps of `gpu_step_s`.
HostPipelineResult simulate_host_pipeline(const HostConfig& h, const topo::ClusterConfig& cluster,
                                          double samples_per_gpu, double gpu_step_s);

}  // namespace stacksim::analysis
