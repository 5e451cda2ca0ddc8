// The step program's data-parallel volumes against their closed forms.
#include <gtest/gtest.h>

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/ops.hpp"
#include "models/workload/program_builder.hpp"
#include "tests/workload/gpt_model.hpp"

namespace stacksim::workload {
namespace {


compute::GpuModel gpu() {
  hw::GpuSpec s;
  s.name = "ideal";
  s.sm_count = 100;
  s.hbm_Bps = 2e12;
  s.hbm_efficiency = 1.0;
  s.peak_flops_per_s["bf16"] = 1e15;
  s.peak_flops_per_s["fp32"] = 1e14;
  return compute::GpuModel(s);
}

// Bytes of gradients one rank hands to data-parallel reduction per step.
double reduced_grad_bytes(const StepProgram& prog) {
  double b = prog.embedding_grad_bytes + prog.head_grad_bytes;
  for (const LayerProgram& l : prog.layers) b += l.grad_bytes;
  return b;
}

}  // namespace

TEST(StepProgram, DataParallelGradientBytesAreTheRanksParametersInTheGradientPrecision) {
  const ModelConfig m = gpt_model(4, 1024, 16, 1024);
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  const compute::GpuModel g = gpu();
  // Every parameter: layers, input embedding, untied output layer, final norm.
  const double params = m.total_params();
  EXPECT_DOUBLE_EQ(reduced_grad_bytes(build_step_program(m, p, g)), 2.0 * params);
  p.grad_reduce_fp32 = true;
  EXPECT_DOUBLE_EQ(reduced_grad_bytes(build_step_program(m, p, g)), 4.0 * params);
}

}  // namespace stacksim::workload
