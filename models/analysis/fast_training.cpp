#include "models/analysis/fast_training.hpp"

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/flops.hpp"
#include "models/workload/memory.hpp"

namespace stacksim::analysis {

FastTier::FastTier(const TrainingSetup& base) : base_(base), gpu_(hw::bundled_gpus().get(base.gpu)) {
  // As simulate_training: the what-if scales on the GPU and the cluster, the real peak for MFU.
  peak_bf16_ = compute::GpuModel(gpu_).peak(compute::DType::BF16);
  for (auto& [dtype, flops] : gpu_.peak_flops_per_s) flops *= base_.scales.gpu_flops;
  gpu_.hbm_Bps *= base_.scales.hbm;
  gpu_model_ = std::make_unique<compute::GpuModel>(gpu_);
  cc_ = scaled_cluster(base_);
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

FastTrainingResult FastTier::estimate(const workload::ParallelPlan& plan) {
  const TrainingSetup setup = setup_for(plan);
  const workload::StepProgram program = step_program(setup, plan, *gpu_model_, cc_);
  const workload::FastEstimate e = workload::fast_estimate_step(program, *collectives_);
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
