// The fast tier of plan and purchase search for one scenario: the cluster, its collective tuning
// and the scaled GPU model are built once, and each plan's step is estimated from the replay's own
// costed program (step_program) with workload::fast_estimate_step, then wrapped in the same host
// pipeline, checkpoint and failure accounting as a replayed step (step_around_gpu). Collective
// times and costed programs are memoised across plans: plans that differ only in pp, dp or
// ZeRO stage share the layers' costs. Thread-safe; results do not depend on the thread count.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "models/compute/gpu_model.hpp"
#include "models/workload/fast_estimate.hpp"
#include "services/training.hpp"

namespace stacksim::analysis {

struct FastTrainingResult {
  double gpu_step_s = 0;   // the estimated GPU step (fast_estimate_step)
  double step_time_s = 0;  // with data wait and checkpoint stalls, as TrainingResult's
  double tokens_per_s = 0;
  double goodput_tokens_per_s = 0;
  double failure_loss_fraction = 0;
  double mfu = 0;
  int critical_stage = 0;
};

class FastTier {
 public:
  // `base`: the scenario whose cluster, GPU, model, host, checkpoint and failure settings every
  // plan shares. Throws config::InputError for a GPU the catalogue lacks.
  explicit FastTier(const TrainingSetup& base);
  const TrainingSetup& base() const { return base_; }
  double gpu_memory_bytes() const { return gpu_.memory_bytes; }
  // Whether `plan` (recompute already resolved) fits in the GPU's memory.
  bool fits(const workload::ParallelPlan& plan) const;
  // The estimate for `plan` (recompute resolved; valid for the model and cluster).
  FastTrainingResult estimate(const workload::ParallelPlan& plan);
  // The setup a replay of `plan` runs (recompute as given, not auto).
  TrainingSetup setup_for(const workload::ParallelPlan& plan) const;

 private:
  TrainingSetup base_;
  hw::GpuSpec gpu_;
  double peak_bf16_ = 0;
  std::unique_ptr<compute::GpuModel> gpu_model_;
  topo::ClusterConfig cc_;
  std::unique_ptr<topo::Cluster> cluster_;
  coll::CommTuning tuning_;
  std::unique_ptr<workload::CollectiveTimes> collectives_;
  // Costed layers by what they depend on (layer_key): tp, cp, ep, micro-batch, recompute, ...,
  // with which of them run the same op lists.
  struct Layers {
    std::vector<workload::LayerProgram> layers;
    workload::LayerKinds kinds;
  };
  std::mutex layers_mutex_;
  std::map<std::string, std::shared_ptr<const Layers>> layers_;
  std::shared_ptr<const Layers> layers_for(const workload::ParallelPlan& plan);
};

}  // namespace stacksim::analysis
