// Simulating one training step of a scenario and the metrics the field reports.
// Model FLOPs follow Megatron-LM/NeMo (no recomputation; see models/workload/flops.hpp);
// MFU divides them by the dense 16-bit peak of the GPU (the convention of PaLM and MegatronLM,
// also for FP8 runs); the SC'21 figure uses Narayanan et al.'s recompute-inclusive count.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "models/compute/gpu_model.hpp"
#include "models/workload/layer_timing.hpp"
#include "models/workload/memory.hpp"
#include "models/workload/replay.hpp"
#include "services/scenario.hpp"
#include "sim/engine.hpp"

namespace stacksim::analysis {

struct RunOptions {
  std::string trace_path;
  // Also time one layer alone (TrainingResult::layer): two small extra replays that `run`,
  // validation and the Python API report; sweeps, plan search and compare leave it out.
  bool layer_timing = true;
  // Steps of more micro-batches per rank are replayed at two shorter depths and extended
  // (workload::replay_step_bounded); a trace always replays them all.
  int max_replayed_micro_batches = 256;

  // What sweeps, plan search and compare run: the step alone, without the one-layer timing.
  static RunOptions step_only() {
    RunOptions o;
    o.layer_timing = false;
    return o;
  }
};

struct TrainingResult {
  int num_gpus = 0;
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double sc21_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double peak_tflops = 0;  // the dense 16-bit peak used for MFU
  workload::MemoryFootprint memory;
  double memory_per_gpu_bytes = 0;
  double gpu_memory_bytes = 0;
  bool oom = false;
  std::string oom_detail;
  std::string recompute;    // the recomputation simulated
  double usd_per_hour = 0;  // the whole cluster at the scenario's prices; 0 without prices
  double usd_per_million_tokens = 0;
  std::vector<std::pair<std::string, double>> breakdown;  // seconds, sums to step_time_s
  workload::LayerTiming layer;                            // one middle layer, one micro-batch, alone on its ranks
  bool has_layer_timing = false;                          // RunOptions::layer_timing
  double checkpoint_s = 0;                                // amortised checkpoint stall per step (in step_time_s)
  double copy_wait_s = 0;                                 // the part of data_wait spent on the batch's H2D copy
  double failure_loss_fraction = 0;                       // wall time lost to restarts and recomputed work
  double goodput_tokens_per_s = 0;                        // tokens_per_s after failures (data waits and checkpoints
                                                          // are already in the step)
  // 80 % interval from the stack family's cross-validated residuals (stack_profile.hpp); empty
  // ({0, 0}) when no fit is installed.
  std::pair<double, double> step_time_interval_s{0, 0}, tokens_per_s_per_gpu_interval{0, 0};
  bool interval_widened = false;  // the stack, GPU or scale lies outside what was fitted
  StackBand band;                 // the band behind them (as widened), for a speedup's interval
  std::string stack_fitted;       // the fitted entry it came from (a family, or "global")
  std::string bottleneck;
  int critical_stage = 0;
  double host_launches_per_step = 0;  // kernels one rank's host launches per step (pipeline mean)
  size_t tasks = 0;
  sim::EngineStats engine;
  double wall_s = 0;
  std::vector<std::string> notes;
};

// Plain words for a breakdown category ("gemm" -> "GEMM compute"), as in the bottleneck verdict.
std::string category_label(const std::string& category);
// The same for a result's category: its data wait names the batch's copy where that is most of it.
std::string category_label(const TrainingResult& r, const std::string& category);

TrainingResult simulate_training(const TrainingSetup& setup, const RunOptions& options);

// What the step is around the GPU's (`gpu_step_s`): the host pipeline's data wait, the amortised
// checkpoint stall and the failures' share of wall time (resilience.hpp); shared by the replay
// (simulate_training) and the fast tier of plan search.
struct StepAroundGpu {
  double step_s = 0;  // the GPU step + data wait + checkpoint stall
  double data_wait_s = 0, checkpoint_s = 0, failure_loss_fraction = 0;
  int nodes_simulated = 1;
};
// The cluster with the setup's what-if scales applied (NVLink, PCIe, network).
topo::ClusterConfig scaled_cluster(const TrainingSetup& setup);
// The GPU and the cluster as the replay and the fast tier run them: the what-if scales and the
// software stack's fitted rates (compute efficiency and kernel gap on the GPU, communication
// efficiency on NVLink and the network) applied; identity for the reference stack.
hw::GpuSpec stack_scaled_gpu(const TrainingSetup& setup, hw::GpuSpec gpu);
topo::ClusterConfig stack_scaled_cluster(const TrainingSetup& setup);
// The costed step program the replay runs for `plan` (host launches, offloaded optimizer, the
// batch's copy set from the setup); `cc` is scaled_cluster(setup).
workload::StepProgram step_program(const TrainingSetup& setup, const workload::ParallelPlan& plan,
                                   const compute::GpuModel& gpu_model, const topo::ClusterConfig& cc,
                                   bool with_layers = true);
StepAroundGpu step_around_gpu(const TrainingSetup& setup, const workload::ParallelPlan& plan, double gpu_step_s);

// The plan as simulated: `recompute: auto` resolved to the least recomputation that fits in
// `gpu_memory_bytes` (none, selective, the first layers of each chunk, every layer).
workload::ParallelPlan plan_as_run(const TrainingSetup& setup, double gpu_memory_bytes);
// Whether the plan as run fits in its GPU's memory (no simulation).
bool fits_in_memory(const TrainingSetup& setup);

nlohmann::json training_json(const Scenario& s, const TrainingResult& r);
void print_training(const Scenario& s, const TrainingResult& r, bool verbose, std::ostream& out);

struct CollectiveRow {
  double bytes = 0, seconds = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::string algorithm;
};
std::vector<CollectiveRow> run_collective_benchmark(const CollectiveBenchSetup& b);
nlohmann::json collective_table_json(const Scenario& s, const std::vector<CollectiveRow>& rows);
void print_collective_table(const Scenario& s, const std::vector<CollectiveRow>& rows, std::ostream& out);

}  // namespace stacksim::analysis
