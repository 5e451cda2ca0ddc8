// Costs a parallel plan's ops on a GPU model and assembles the per-rank step program the replay
// runs: the transformer's per-layer op lists (models/workload/ops.hpp) become compute tasks with
// roofline times (models/compute/gpu_model.hpp) and collectives on their parallel groups.
#pragma once
#include "models/compute/gpu_model.hpp"
#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"
#include "models/workload/replay.hpp"

namespace stacksim::workload {

// `with_layers` false: StepProgram::layers stays empty (the fast tier shares one costed set of
// layers among the plans that cost them alike, fast_training.cpp).
StepProgram build_step_program(const ModelConfig& model, const ParallelPlan& plan, const compute::GpuModel& gpu,
                               bool with_layers = true);

// The kernel launches the host issues per step, per pipeline rank on average: every op list's
// CostedOp::launches (collectives of a single rank launch nothing) over the step's micro-batches,
// plus the optimizer's; what host.kernel_launch is charged for (the replay's host chain).
double host_launches_per_rank(const StepProgram& program);

}  // namespace stacksim::workload
