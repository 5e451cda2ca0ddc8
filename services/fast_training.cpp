#include "services/fast_training.hpp"

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/flops.hpp"
#include "models/workload/memory.hpp"

namespace stacksim::analysis {

FastTier::FastTier(const TrainingSetup& base) : base_(base), gpu_(hw::bundled_gpus().get(base.gpu)) {
  // As simulate_training: the what-if scales and the software stack's rates on the GPU and the
  // cluster, the real peak for MFU.
  peak_bf16_ = compute::GpuModel(gpu_).peak(compute::DType::BF16);
  gpu_ = stack_scaled_gpu(base_, gpu_);
  gpu_model_ = std::make_unique<compute::GpuModel>(gpu_);
  cc_ = stack_scaled_cluster(base_);
  cluster_ = std::make_unique<topo::Cluster>(topo::build_cluster(cc_));
  tuning_ = coll::tuning_for(cc_.node, cc_.nic);
  collectives_ = std::make_unique<workload::CollectiveTimes>(*cluster_, tuning_);
}

bool FastTier::fits(const workload::ParallelPlan& plan) const {
  return !workload::out_of_memory(workload::memory_per_gpu(base_.model, plan), gpu_.memory_bytes);
}

TrainingSetup FastTier::setup_for(const workload::ParallelPlan& plan) const {
  TrainingSetup s = base_;
  s.plan = plan;
  s.recompute_auto = false;
  return s;
}

namespace {
// What a plan's costed layers depend on besides the scenario (ops.cpp, program_builder.cpp): the
// shapes (tp, cp, ep, micro-batch, sequence parallelism), the recomputation (per layer: with
// recompute_layers, by chunk, so pp and vp too), FSDP's passes (zero 3) and, under autocast, the
// micro-batch count. Not pp, dp, vp or the ZeRO stage otherwise.
std::string layer_key(const workload::ParallelPlan& p) {
  std::string k;
  for (long long v :
       {(long long)p.tp, (long long)p.cp, (long long)p.ep, (long long)p.expert_tp(), (long long)p.micro_batch,
        (long long)p.recompute, (long long)p.recompute_modules, (long long)p.sp(), (long long)(p.zero >= 3),
        (long long)p.recompute_layers, p.recompute_layers > 0 ? (long long)p.pp : 0LL,
        p.recompute_layers > 0 ? (long long)p.vp : 0LL, p.autocast ? (long long)p.num_micro_batches() : 0LL})
    k += std::to_string(v) + ",";
  return k;
}
}  // namespace

std::shared_ptr<const FastTier::Layers> FastTier::layers_for(const workload::ParallelPlan& plan) {
  const std::string key = layer_key(plan);
  {
    std::lock_guard<std::mutex> lock(layers_mutex_);
    const auto it = layers_.find(key);
    if (it != layers_.end()) return it->second;
  }
  // Outside the lock: the same key always costs the same layers.
  auto costed = std::make_shared<Layers>();
  costed->layers = step_program(setup_for(plan), plan, *gpu_model_, cc_).layers;
  costed->kinds = workload::layer_kinds(costed->layers);
  std::shared_ptr<const Layers> layers = std::move(costed);
  std::lock_guard<std::mutex> lock(layers_mutex_);
  return layers_.emplace(key, std::move(layers)).first->second;
}

FastTrainingResult FastTier::estimate(const workload::ParallelPlan& plan) {
  const TrainingSetup setup = setup_for(plan);
  const auto layers = layers_for(plan);
  const workload::StepProgram program = step_program(setup, plan, *gpu_model_, cc_, false);
  const workload::FastEstimate e = workload::fast_estimate_step(program, layers->layers, layers->kinds, *collectives_);
  const StepAroundGpu around = step_around_gpu(setup, plan, e.step_time_s);
  FastTrainingResult r;
  r.gpu_step_s = e.step_time_s;
  r.step_time_s = around.step_s;
  r.critical_stage = e.critical_stage;
  r.failure_loss_fraction = around.failure_loss_fraction;
  r.tokens_per_s = static_cast<double>(plan.global_batch) * base_.model.seq_len / r.step_time_s;
  r.goodput_tokens_per_s = r.tokens_per_s * (1 - r.failure_loss_fraction);
  r.mfu = workload::model_flops_per_step(base_.model, plan) / r.step_time_s / plan.num_gpus() / peak_bf16_;
  return r;
}

}  // namespace stacksim::analysis
