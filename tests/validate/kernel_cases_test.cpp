// The kernel model against the published kernel measurements (validate/kernel_cases).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "models/compute/gpu_model.hpp"
#include "validate/kernel_cases.hpp"

using namespace stacksim;
using namespace stacksim::compute;

namespace {

const hw::GpuCatalog& gpus() {
  static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

const std::string kCases = std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml";

}  // namespace

TEST(KernelValidation, PublishedGemmAndStreamCasesWithinTargets) {
  // Targets of the kernel model (validation/README.md cases): GEMM MAPE <= 15 %, STREAM <= 10 %.
  if (!std::filesystem::exists(kCases)) GTEST_SKIP() << "no " << kCases;
  const auto results = validate_kernel_cases(kCases, gpus());
  const auto gemm = summarize_kernel_cases(results, "gemm");
  const auto stream = summarize_kernel_cases(results, "stream");
  std::printf("GEMM: %zu cases, MAPE %.2f %%, max %.1f %%; STREAM: %zu cases, MAPE %.2f %%, max %.1f %%\n", gemm.cases,
              gemm.mape_pct, gemm.max_abs_error_pct, stream.cases, stream.mape_pct, stream.max_abs_error_pct);
  for (const auto& r : results)
    std::printf("  %-58s %10.1f %10.1f %+7.1f%% %s\n", r.id.c_str(), r.predicted, r.measured, r.error_pct,
                r.error.c_str());
  EXPECT_GE(gemm.cases, 35u);
  EXPECT_EQ(stream.cases, 15u);
  EXPECT_LE(gemm.mape_pct, 15.0);
  EXPECT_LE(stream.mape_pct, 10.0);
}

TEST(KernelValidation, AttentionCasesCountTheBenchmarkFlopsOverTheModelledPasses) {
  // FlashAttention's benchmark counts a causal forward as 4*b*h*s^2*d / 2 and the backward as 2.5x:
  // the case's TFLOP/s is that count over the modelled forward plus backward seconds.
  const YAML::Node c = YAML::Load(R"(
id: fa2
kind: attention
hardware: {gpu: GB200}
op: {kernel: flash2, batch: 2, heads: 16, seq: 8192, head_dim: 128, causal: true, pass: forward+backward, dtype: fp16}
measured: {tflops: 373.9}
)");
  const KernelCaseResult r = predict_kernel_case(c, gpus());
  ASSERT_TRUE(r.ok()) << r.error;
  const GpuModel m(gpus().get("GB200"));
  const double fwd =
      m.attention_forward(2, 16, 16, 8192, 8192, 128, true, DType::FP16, AttentionKernel::Flash2).seconds;
  const double bwd =
      m.attention_backward(2, 16, 16, 8192, 8192, 128, true, DType::FP16, AttentionKernel::Flash2).seconds;
  const double flops = 3.5 * 4.0 * 2 * 16 * 8192.0 * 8192.0 * 128 / 2;
  EXPECT_NEAR(r.predicted, flops / (fwd + bwd) / 1e12, 1e-9 * r.predicted);
  EXPECT_EQ(r.metric, "tflops");
  // FlashAttention-2 runs its sm80 code on Blackwell: far below the fused kernels' rate.
  YAML::Node fused = YAML::Clone(c);
  fused["op"]["kernel"] = "fused";
  EXPECT_GT(predict_kernel_case(fused, gpus()).predicted, 2.5 * r.predicted);
  // The forward alone counts only the forward's FLOPs over its own seconds.
  YAML::Node forward = YAML::Clone(c);
  forward["op"]["pass"] = "forward";
  EXPECT_NEAR(predict_kernel_case(forward, gpus()).predicted, flops / 3.5 / fwd / 1e12, 1e-9 * r.predicted);
  // Bad fields are reported, not guessed.
  YAML::Node bad = YAML::Clone(c);
  bad["op"]["kernel"] = "flash3";
  EXPECT_NE(predict_kernel_case(bad, gpus()).error.find("op.kernel"), std::string::npos);
  YAML::Node missing = YAML::Clone(c);
  missing["op"].remove("causal");
  EXPECT_NE(predict_kernel_case(missing, gpus()).error.find("op.causal"), std::string::npos);
}
