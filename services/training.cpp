#include "services/training.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "config/error.hpp"
#include "models/collectives/collective.hpp"
#include "models/compute/gpu_model.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/workload/ops.hpp"
#include "models/workload/program_builder.hpp"
#include "models/workload/replay.hpp"
#include "services/result_checks.hpp"
#include "sim/units.hpp"

namespace stacksim::analysis {

std::string category_label(const std::string& category) {
  if (category == "gemm") return "GEMM compute";
  if (category == "attention") return "attention compute";
  if (category == "elementwise") return "element-wise/memory-bound kernels";
  if (category == "optimizer") return "optimizer step";
  if (category == "tp_comm") return "exposed tensor-parallel communication";
  if (category == "cp_comm") return "exposed context-parallel communication";
  if (category == "ep_comm") return "exposed expert-parallel all-to-all";
  if (category == "pp_comm") return "exposed pipeline send/recv";
  if (category == "dp_comm") return "exposed data-parallel communication";
  if (category == "pipeline_bubble") return "pipeline bubble";
  if (category == "data_wait") return "waiting for the data loader";
  if (category == "checkpoint") return "checkpoint stalls";
  if (category == "host_launch") return "waiting for the host (kernel launches and step work)";
  if (category == "activation_offload") return "waiting for offloaded activations (PCIe)";
  return "idle";
}

std::string category_label(const TrainingResult& r, const std::string& category) {
  if (category == "data_wait") {
    for (const auto& [k, s] : r.breakdown)
      if (k == category && r.copy_wait_s > s - r.copy_wait_s) return "waiting for the batch's host-to-device copy";
  }
  return category_label(category);
}

namespace {

// Weights (2 B) and optimizer state (12 B, 8 with bf16 moments) per parameter, each unique shard
// written once (as distributed checkpointing does): the GPU's shard of a fully sharded optimizer,
// x (2 + state) / state.
double checkpoint_bytes_per_gpu(const TrainingSetup& setup, const workload::ParallelPlan& plan) {
  if (setup.checkpoint.bytes > 0) return setup.checkpoint.bytes / plan.num_gpus();
  workload::ParallelPlan sharded = plan;
  sharded.zero = std::max(plan.zero, 1);
  const double state = plan.optimizer_bytes_per_param();
  return workload::memory_per_gpu(setup.model, sharded).optimizer_bytes * (2.0 + state) / state;
}

}  // namespace

workload::ParallelPlan plan_as_run(const TrainingSetup& setup, double gpu_memory_bytes) {
  workload::ParallelPlan plan = setup.plan;
  if (!setup.recompute_auto) return plan;
  // recompute: auto = the least recomputation that fits in memory: none, selective, then full
  // recomputation of the first 1, 2, ... layers of each model chunk (Megatron's block method),
  // then of every layer.
  const auto fits = [&] {
    return !workload::out_of_memory(workload::memory_per_gpu(setup.model, plan), gpu_memory_bytes);
  };
  for (auto rc : {workload::Recompute::None, workload::Recompute::Selective}) {
    plan.recompute = rc;
    if (fits()) return plan;
  }
  plan.recompute = workload::Recompute::Full;
  const int per_chunk = workload::max_layers_per_chunk(setup.model, plan);
  for (int k = 1; k < per_chunk; ++k) {
    plan.recompute_layers = k;
    if (fits()) return plan;
  }
  plan.recompute_layers = 0;
  return plan;
}

bool fits_in_memory(const TrainingSetup& setup) {
  const double capacity = hw::bundled_gpus().get(setup.gpu).memory_bytes;
  return !workload::out_of_memory(workload::memory_per_gpu(setup.model, plan_as_run(setup, capacity)), capacity);
}

topo::ClusterConfig scaled_cluster(const TrainingSetup& setup) {
  topo::ClusterConfig cc = setup.cluster;
  cc.node.intra_bandwidth_Bps *= setup.scales.nvlink;
  cc.node.pcie_bandwidth_Bps *= setup.scales.pcie;
  cc.nic.bandwidth_Bps *= setup.scales.network;
  return cc;
}

hw::GpuSpec stack_scaled_gpu(const TrainingSetup& setup, hw::GpuSpec gpu) {
  for (auto& [dtype, flops] : gpu.peak_flops_per_s) flops *= setup.scales.gpu_flops;
  gpu.hbm_Bps *= setup.scales.hbm;
  // The software stack's fitted rates (identity for the reference stack, so nothing changes).
  const StackParameters& stack = setup.software.params;
  if (!stack.identity()) {
    for (auto& [dtype, flops] : gpu.peak_flops_per_s) flops *= stack.compute_efficiency;
    gpu.hbm_Bps *= stack.compute_efficiency;
    gpu.kernel_overhead_s += stack.kernel_gap_s;
  }
  return gpu;
}

topo::ClusterConfig stack_scaled_cluster(const TrainingSetup& setup) {
  topo::ClusterConfig cc = scaled_cluster(setup);
  const StackParameters& stack = setup.software.params;
  if (!stack.identity()) {
    cc.node.intra_bandwidth_Bps *= stack.comm_efficiency;
    cc.nic.bandwidth_Bps *= stack.comm_efficiency;
  }
  return cc;
}

workload::StepProgram step_program(const TrainingSetup& setup, const workload::ParallelPlan& plan,
                                   const compute::GpuModel& gpu_model, const topo::ClusterConfig& cc,
                                   bool with_layers) {
  workload::StepProgram program = workload::build_step_program(setup.model, plan, gpu_model, with_layers);
  program.host_launch_s = setup.host.kernel_launch_s / setup.scales.host_launch;
  program.host_step_s = setup.host.step_overhead_s / setup.scales.host_launch;
  if (plan.offload_optimizer) {
    if (cc.node.socket_memory_Bps <= 0)
      throw config::InputError(
          setup.origin, 0, "parallelism.offload_optimizer",
          "runs Adam on the host, but node type " + cc.node.name + " gives no CPU memory bandwidth",
          "add cpu.memory_bandwidth (per socket) to " + (cc.node.file.empty() ? "its node file" : cc.node.file));
    program.offload_optimizer = true;
    program.offload_params = plan.offload_params;
    program.offload_d2h_per_grad_byte = 4.0 / plan.grad_bytes_per_param();  // fp32 copies
    // DeepSpeed's CPU-Adam per parameter: fp32 gradient read (4), weight and two moments read and
    // written (24), the 16-bit weight written for the copy back (2).
    program.offload_host_bytes_per_param = 4.0 + 2.0 * plan.adam_state_bytes_per_param() + 2.0;
    program.host_memory_Bps =
        cc.node.cpu_sockets * cc.node.socket_memory_Bps * kHostMemoryEfficiency * setup.scales.host_memory;
  }
  const double samples_per_gpu = static_cast<double>(plan.global_batch) / plan.dp;
  if (setup.host.enabled && setup.host.sample_bytes > 0) {
    // The batch's host-to-device copy runs in the step, on the PCIe links it shares with the NICs:
    // a pinned one under the step, for the next batch (loaded ahead: prefetch >= 1); a pageable
    // one, or any once loading is synchronous, before the step's first kernel.
    program.batch_copy_bytes = samples_per_gpu * setup.host.sample_bytes;
    program.batch_copy_Bps =
        cc.node.pcie_bandwidth_Bps * (setup.host.pinned ? kPinnedCopyEfficiency : kPageableCopyEfficiency);
    program.batch_copy_blocking = !setup.host.pinned || setup.host.prefetch == 0;
  }
  return program;
}

StepAroundGpu step_around_gpu(const TrainingSetup& setup, const workload::ParallelPlan& plan, double gpu_step_s) {
  // The host: the step waits for its batch when the loader or storage is slower than the GPUs.
  HostConfig host = setup.host;
  host.cpu_seconds_per_sample /= setup.scales.cpu_loader;
  if (host.storage_read_Bps > 0) host.storage_read_Bps *= setup.scales.storage;
  topo::ClusterConfig host_cluster = scaled_cluster(setup);  // as the replay's cluster
  host_cluster.node.storage_read_Bps *= setup.scales.storage;
  host_cluster.node.storage_write_Bps *= setup.scales.storage;
  const double samples_per_gpu = static_cast<double>(plan.global_batch) / plan.dp;
  const HostPipelineResult hp = simulate_host_pipeline(host, host_cluster, samples_per_gpu, gpu_step_s);
  // Checkpoints stall the step (amortised over their interval); failures cost goodput.
  CheckpointConfig checkpoint = setup.checkpoint;
  checkpoint.write_Bps_per_node *= setup.scales.storage;
  checkpoint.aggregate_write_Bps *= setup.scales.storage;
  const CheckpointTimes ck =
      checkpoint_times(checkpoint, host_cluster, checkpoint_bytes_per_gpu(setup, plan), hp.step_s);
  StepAroundGpu out;
  out.data_wait_s = hp.data_wait_s;
  out.nodes_simulated = hp.nodes_simulated;
  out.checkpoint_s = ck.per_step_s;
  out.step_s = hp.step_s + ck.per_step_s;
  out.failure_loss_fraction =
      failure_loss_fraction(setup.failures, setup.cluster, setup.checkpoint.every_steps * out.step_s);
  return out;
}

TrainingResult simulate_training(const TrainingSetup& setup, const RunOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  hw::GpuSpec gpu = hw::bundled_gpus().get(setup.gpu);
  if (setup.model.attention == workload::AttentionImpl::Flash1 && gpu.flash1_forward_efficiency <= 0)
    throw config::InputError(gpu.file, 0, "calibration.flash1_efficiency",
                             "model.attention is flash1 but " + gpu.name + " has no FlashAttention (v1) profile",
                             "use model.attention: flash2 or flash, or add flash1_efficiency to the GPU's calibration");
  const double peak_bf16 = compute::GpuModel(gpu).peak(compute::DType::BF16);
  gpu = stack_scaled_gpu(setup, gpu);
  const compute::GpuModel gpu_model(gpu);
  TrainingResult r;
  r.notes = setup.notes;
  const workload::ParallelPlan plan = plan_as_run(setup, gpu.memory_bytes);
  r.recompute = workload::recompute_name(plan.recompute);
  if (plan.recompute == workload::Recompute::Selective && plan.recompute_modules != workload::kRecomputeCoreAttn)
    r.recompute += " (" + workload::recompute_modules_name(plan.recompute_modules) + ")";
  if (plan.recompute == workload::Recompute::Full && plan.recompute_layers > 0)
    r.recompute += " (" + std::to_string(plan.recompute_layers) + (plan.recompute_layers == 1 ? " layer" : " layers") +
                   " per model chunk)";
  r.memory = workload::memory_per_gpu(setup.model, plan);
  r.memory_per_gpu_bytes = r.memory.total_bytes();
  r.gpu_memory_bytes = gpu.memory_bytes;
  r.oom = workload::out_of_memory(r.memory, gpu.memory_bytes);
  if (r.oom)
    r.oom_detail = sim::format_bytes(r.memory_per_gpu_bytes) + " needed per GPU, " +
                   sim::format_bytes(gpu.memory_bytes) + " available";

  const topo::ClusterConfig cc = stack_scaled_cluster(setup);
  const topo::Cluster cluster = topo::build_cluster(cc);
  const coll::CommTuning tuning = coll::tuning_for(cc.node, cc.nic);
  const workload::StepProgram program = step_program(setup, plan, gpu_model, cc);
  r.host_launches_per_step = workload::host_launches_per_rank(program);
  workload::ReplayOptions ro;
  ro.trace_path = options.trace_path;
  bool extrapolated = false;
  const workload::ReplayResult rr =
      workload::replay_step_bounded(program, cluster, tuning, ro, options.max_replayed_micro_batches, &extrapolated);
  if (extrapolated)
    r.notes.push_back(std::to_string(program.micro_batches) + " micro-batches per rank: the step was replayed at two " +
                      "shorter depths and extended along their steady-state slope (--trace replays them all)");
  if (options.layer_timing) r.layer = workload::time_layer(program, setup.model.layers / 2, cluster, tuning);
  r.has_layer_timing = options.layer_timing;

  r.num_gpus = plan.num_gpus();
  const StepAroundGpu around = step_around_gpu(setup, plan, rr.step_time_s);
  if (setup.host.sample_cost_cv > 0 && around.nodes_simulated < cc.nodes)
    r.notes.push_back("varying sample costs: the loaders of " + std::to_string(around.nodes_simulated) + " of " +
                      std::to_string(cc.nodes) + " nodes were simulated; the other nodes' late batches would add to " +
                      "the data wait");
  std::vector<double> breakdown_s = rr.breakdown_s;
  breakdown_s[workload::kCatDataWait] += around.data_wait_s;
  breakdown_s[workload::kCatCheckpoint] += around.checkpoint_s;
  const double step = around.step_s;
  r.checkpoint_s = around.checkpoint_s;
  r.failure_loss_fraction = around.failure_loss_fraction;
  r.step_time_s = step;
  r.tokens_per_step = static_cast<double>(plan.global_batch) * setup.model.seq_len;
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  r.tokens_per_s_per_gpu = r.tokens_per_s / r.num_gpus;
  r.goodput_tokens_per_s = r.tokens_per_s * (1 - r.failure_loss_fraction);
  r.model_flops_per_step = workload::model_flops_per_step(setup.model, plan);
  r.hardware_flops_per_step = workload::hardware_flops_per_step(setup.model, plan);
  r.model_tflops_per_gpu = r.model_flops_per_step / r.step_time_s / r.num_gpus / 1e12;
  r.hardware_tflops_per_gpu = r.hardware_flops_per_step / r.step_time_s / r.num_gpus / 1e12;
  r.sc21_tflops_per_gpu = workload::megatron_sc21_flops(plan.global_batch, setup.model.seq_len, setup.model.layers,
                                                        setup.model.hidden, setup.model.vocab) /
                          r.step_time_s / r.num_gpus / 1e12;
  r.peak_tflops = peak_bf16 / 1e12;  // the real GPU's peak, also under what-if scales
  r.mfu = r.model_tflops_per_gpu / r.peak_tflops;
  r.hfu = r.hardware_tflops_per_gpu / r.peak_tflops;
  double worst = -1;
  for (uint16_t c = 0; c < workload::kNumCategories; ++c) {
    const std::string name = workload::category_name(c);
    r.breakdown.emplace_back(name, breakdown_s[c]);
    if (breakdown_s[c] > worst) {
      worst = breakdown_s[c];
      r.bottleneck = name;
    }
  }
  r.copy_wait_s = rr.breakdown_s[workload::kCatDataWait];  // the replay's data wait is the copy's
  r.bottleneck = category_label(r, r.bottleneck);
  if (setup.prices.given) {
    r.usd_per_hour = cluster_usd_per_hour(setup.prices, setup.cluster);
    r.usd_per_million_tokens = usd_per_million_tokens(r.usd_per_hour, r.goodput_tokens_per_s);
  }
  const StackBand band = band_for(setup.software, gpu.architecture, r.num_gpus, &r.interval_widened);
  r.band = band;
  r.stack_fitted = setup.software.fitted;
  if (band.known) {
    r.step_time_interval_s = {r.step_time_s * std::exp(band.lo_log), r.step_time_s * std::exp(band.hi_log)};
    r.tokens_per_s_per_gpu_interval = {r.tokens_per_s_per_gpu / std::exp(band.hi_log),
                                       r.tokens_per_s_per_gpu / std::exp(band.lo_log)};
  }
  r.critical_stage = rr.critical_stage;
  r.tasks = rr.tasks;
  r.engine = rr.engine_stats;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  require_physical_result(setup, r);
  return r;
}

nlohmann::json training_json(const Scenario& s, const TrainingResult& r) {
  nlohmann::json breakdown = nlohmann::json::object();
  for (const auto& [k, v] : r.breakdown) breakdown[k] = v;
  const auto& m = r.memory;
  nlohmann::json j{
      {"scenario", s.name},
      {"num_gpus", r.num_gpus},
      {"step_time_s", r.step_time_s},
      {"tokens_per_step", r.tokens_per_step},
      {"tokens_per_s", r.tokens_per_s},
      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
      {"goodput_tokens_per_s", r.goodput_tokens_per_s},
      {"checkpoint_s", r.checkpoint_s},
      {"failure_loss_fraction", r.failure_loss_fraction},
      {"tflops_per_gpu", r.model_tflops_per_gpu},
      {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
      {"sc21_tflops_per_gpu", r.sc21_tflops_per_gpu},
      {"flops_convention",
       "model FLOPs: 6 x GEMM params x tokens + 12 x layers x seq (a sliding window: its keys) x q_width x tokens (no "
       "recompute)"},
      {"peak_tflops", r.peak_tflops},
      {"mfu", r.mfu},
      {"hfu", r.hfu},
      {"recompute", r.recompute},
      {"cuda_graphs", workload::cuda_graphs_name(s.training.plan.cuda_graphs)},
      {"memory_per_gpu_bytes", r.memory_per_gpu_bytes},
      {"memory",
       {{"weights_bytes", m.weights_bytes},
        {"gradients_bytes", m.gradients_bytes},
        {"optimizer_bytes", m.optimizer_bytes},
        {"activations_bytes", m.activations_bytes},
        {"buffers_bytes", m.buffers_bytes},
        {"reserve_bytes", m.reserve_bytes},
        {"gpu_capacity_bytes", r.gpu_memory_bytes}}},
      {"oom", r.oom},
      {"breakdown", breakdown},
      {"layer_timing", r.has_layer_timing ? nlohmann::json{{"layer", r.layer.layer},
                                                           {"forward_s", r.layer.forward_s},
                                                           {"backward_s", r.layer.backward_s}}
                                          : nlohmann::json()},
      {"bottleneck", r.bottleneck},
      {"critical_stage", r.critical_stage},
      {"host_launches_per_step", r.host_launches_per_step},
      {"notes", r.notes},
      {"engine", {{"tasks", r.tasks}, {"events", r.engine.events}, {"solves", r.engine.solves}, {"wall_s", r.wall_s}}}};
  j["software"] = software_json(s.training.software);
  if (r.step_time_interval_s.second > 0) {
    j["step_time_interval_s"] = {r.step_time_interval_s.first, r.step_time_interval_s.second};
    j["tokens_per_s_per_gpu_interval"] = {r.tokens_per_s_per_gpu_interval.first,
                                          r.tokens_per_s_per_gpu_interval.second};
    j["interval_widened"] = r.interval_widened;
  }
  if (r.usd_per_hour > 0) {
    j["usd_per_hour"] = r.usd_per_hour;
    j["usd_per_million_tokens"] = r.usd_per_million_tokens;
  }
  return j;
}

void print_training(const Scenario& s, const TrainingResult& r, bool verbose, std::ostream& out) {
  char line[512];
  out << "scenario " << s.name << ": " << r.num_gpus << " GPUs (" << s.training.gpu << ", "
      << s.training.cluster.node.name << " x " << s.training.cluster.nodes << ")\n";
  const auto& p = s.training.plan;
  std::string etp, schedule;
  if (p.experts_folded()) etp.append(" etp ").append(std::to_string(p.expert_tp()));
  if (p.pp > 1 && p.schedule != workload::Schedule::OneFOneB) schedule = p.dualpipe() ? " (dualpipe)" : " (gpipe)";
  std::string extras = p.cuda_graphs ? ", cuda graphs " + workload::cuda_graphs_name(p.cuda_graphs) : "";
  if (p.offload_optimizer)
    extras += p.offload_params ? ", optimizer and parameters on the host" : ", optimizer on the host";
  if (p.offload_activations) extras += ", activations offloaded";
  std::snprintf(
      line, sizeof line,
      "plan: tp %d pp %d%s dp %d cp %d ep %d%s vp %d, micro-batch %d, global batch %d, %s, recompute %s, zero %d%s\n",
      p.tp, p.pp, schedule.c_str(), p.dp, p.cp, p.ep, etp.c_str(), p.vp, p.micro_batch, p.global_batch,
      workload::precision_name(p.precision), r.recompute.c_str(), p.zero, extras.c_str());
  out << line;
  const SoftwareStack& sw = s.training.software;
  out << "software: " << sw.framework << (sw.version.empty() ? "" : " " + sw.version)
      << (sw.year ? " (" + std::to_string(sw.year) + ")" : "") << ", profile " << sw.profile << "\n";
  std::snprintf(line, sizeof line, "step time        %s\n", sim::format_seconds(r.step_time_s).c_str());
  out << line;
  if (r.step_time_interval_s.second > 0) {
    std::snprintf(line, sizeof line, "  80%% interval   %s to %s (%.4g to %.4g tokens/s per GPU; %s%s)\n",
                  sim::format_seconds(r.step_time_interval_s.first).c_str(),
                  sim::format_seconds(r.step_time_interval_s.second).c_str(), r.tokens_per_s_per_gpu_interval.first,
                  r.tokens_per_s_per_gpu_interval.second,
                  sw.fitted == "global" ? "all stacks' residuals" : (sw.fitted + " residuals").c_str(),
                  r.interval_widened ? ", widened: outside what was fitted" : "");
    out << line;
  }
  std::snprintf(line, sizeof line, "tokens/s         %.4g (%.4g per GPU)\n", r.tokens_per_s, r.tokens_per_s_per_gpu);
  out << line;
  if (s.training.checkpoint.enabled || s.training.failures.enabled) {
    std::snprintf(line, sizeof line, "goodput tokens/s %.4g (checkpoints %s per step, %.2f%% lost to failures)\n",
                  r.goodput_tokens_per_s, sim::format_seconds(r.checkpoint_s).c_str(), 100 * r.failure_loss_fraction);
    out << line;
  }
  std::snprintf(line, sizeof line, "TFLOP/s per GPU  %.1f model, %.1f with recompute (peak %.0f)\n",
                r.model_tflops_per_gpu, r.hardware_tflops_per_gpu, r.peak_tflops);
  out << line;
  std::snprintf(line, sizeof line, "MFU              %.1f%%\n", 100 * r.mfu);
  out << line;
  std::snprintf(line, sizeof line, "memory per GPU   %s of %s%s\n", sim::format_bytes(r.memory_per_gpu_bytes).c_str(),
                sim::format_bytes(r.gpu_memory_bytes).c_str(), r.oom ? "  -> OUT OF MEMORY" : "");
  out << line;
  out << "where the time goes (critical stage " << r.critical_stage << "):\n";
  for (const auto& [k, v] : r.breakdown) {
    if (v <= 0) continue;
    std::snprintf(line, sizeof line, "  %-16s %10s  %5.1f%%\n", k.c_str(), sim::format_seconds(v).c_str(),
                  100 * v / r.step_time_s);
    out << line;
  }
  out << "bottleneck: " << r.bottleneck << "\n";
  if (r.has_layer_timing) {
    std::snprintf(line, sizeof line, "one layer        %s forward, %s backward (layer %d, one micro-batch, alone)\n",
                  sim::format_seconds(r.layer.forward_s).c_str(), sim::format_seconds(r.layer.backward_s).c_str(),
                  r.layer.layer);
    out << line;
  }
  if (r.usd_per_hour > 0) {
    std::snprintf(line, sizeof line, "cost             $%.4g per million tokens ($%.4g per cluster hour)\n",
                  r.usd_per_million_tokens, r.usd_per_hour);
    out << line;
  }
  for (const auto& n : r.notes) out << "note: " << n << "\n";
  if (verbose) {
    std::snprintf(line, sizeof line,
                  "engine: %zu tasks, %llu events, %llu solves, %.3f s wall (%.3g simulated s per wall s)\n", r.tasks,
                  static_cast<unsigned long long>(r.engine.events), static_cast<unsigned long long>(r.engine.solves),
                  r.wall_s, r.step_time_s / std::max(1e-9, r.wall_s));
    out << line;
  }
}

std::vector<CollectiveRow> run_collective_benchmark(const CollectiveBenchSetup& b) {
  const topo::Cluster cluster = topo::build_cluster(b.cluster);
  const coll::CommTuning tuning = coll::tuning_for(b.cluster.node, b.cluster.nic);
  std::vector<CollectiveRow> rows;
  for (double bytes : b.sizes_bytes) {
    coll::Collective c;
    c.op = b.op;
    c.ranks = b.ranks;
    c.bytes = bytes;
    c.algorithm = b.algorithm;
    if (c.op == coll::CollectiveOp::SendRecv) c.peer = b.ranks.back();
    const coll::CollectiveTiming t = coll::time_collective(cluster, tuning, c);
    rows.push_back({bytes, t.seconds, t.algbw_Bps / 1e9, t.busbw_Bps / 1e9,
                    std::string(coll::algorithm_name(t.algorithm)) + "/" + t.protocol});
  }
  return rows;
}

nlohmann::json collective_table_json(const Scenario& s, const std::vector<CollectiveRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows)
    j.push_back({{"bytes", r.bytes},
                 {"time_s", r.seconds},
                 {"algbw_GBps", r.algbw_GBps},
                 {"busbw_GBps", r.busbw_GBps},
                 {"algorithm", r.algorithm}});
  return nlohmann::json{
      {"scenario", s.name}, {"op", coll::op_name(s.bench.op)}, {"gpus", s.bench.ranks.size()}, {"rows", j}};
}

void print_collective_table(const Scenario& s, const std::vector<CollectiveRow>& rows, std::ostream& out) {
  char line[200];
  out << "# " << s.name << ": " << coll::op_name(s.bench.op) << " on " << s.bench.ranks.size() << " GPUs ("
      << s.bench.cluster.node.name << " x " << s.bench.cluster.nodes << ")\n";
  std::snprintf(line, sizeof line, "%14s %12s %12s %12s  %s\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                "algorithm");
  out << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%14.0f %12.2f %12.2f %12.2f  %s\n", r.bytes, r.seconds * 1e6, r.algbw_GBps,
                  r.busbw_GBps, r.algorithm.c_str());
    out << line;
  }
}

}  // namespace stacksim::analysis
