// The kernel model against closed forms and physical limits.
#include <gtest/gtest.h>

#include "config/error.hpp"
#include "models/compute/gpu_model.hpp"
#include "models/hardware/node_spec.hpp"

using namespace stacksim;
using namespace stacksim::compute;

namespace {

const hw::GpuCatalog& gpus() {
  static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

}  // namespace

TEST(GpuCatalog, LoadsEveryProfileAndResolvesAliases) {
  EXPECT_GE(gpus().names().size(), 10u);
  EXPECT_EQ(gpus().get("A100-SXM4").name, "A100-SXM4-80GB");
  EXPECT_EQ(gpus().get("H100").sm_count, 132);
  try {
    gpus().get("H100-SXM-80GB");
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

TEST(GpuModel, GemmCountsTwoMnkFlops) {
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  EXPECT_DOUBLE_EQ(m.gemm(4096, 2048, 1024, DType::BF16).flops, 2.0 * 4096 * 2048 * 1024);
  EXPECT_DOUBLE_EQ(m.gemm(64, 64, 64, DType::BF16, 3).flops, 3 * 2.0 * 64 * 64 * 64);
}

TEST(GpuModel, LargeSquareGemmIsComputeBoundNearTheMeasuredMaximum) {
  // Efficiency of a 16384^3 bf16 GEMM on H100: below the measured best-shape 80.3 %, above 60 %.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const KernelCost c = m.gemm(16384, 16384, 16384, DType::BF16);
  EXPECT_FALSE(c.memory_bound);
  EXPECT_GT(c.efficiency, 0.60);
  EXPECT_LE(c.efficiency, 0.803 + 1e-9);
}

TEST(GpuModel, SkinnyGemmIsMemoryBound) {
  // m = 1: time ~ bytes / achievable HBM rate (+ the kernel floor).
  const GpuModel m(gpus().get("A100-SXM4-80GB"));
  const KernelCost c = m.gemm(1, 8192, 8192, DType::BF16);
  EXPECT_TRUE(c.memory_bound);
  const double bytes = (8192.0 + 8192.0 * 8192 + 8192) * 2;
  EXPECT_NEAR(c.seconds, bytes / m.hbm_rate_Bps() + m.kernel_overhead_s(), 1e-9);
}

TEST(GpuModel, WaveQuantisationPenalisesOneTileTooMany) {
  // 132 tiles of 128x128 fill one wave of 132 SMs exactly; 133 tiles need a second wave (or a
  // stream-K tail): per-FLOP efficiency must drop.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const KernelCost full = m.gemm(128 * 12, 128 * 11, 8192, DType::BF16);
  const KernelCost over = m.gemm(128 * 12 + 8, 128 * 11 + 8, 8192, DType::BF16);
  EXPECT_LT(over.efficiency, full.efficiency * 0.97);
}

TEST(GpuModel, CausalAttentionHasHalfTheFlops) {
  const GpuModel m(gpus().get("A100-SXM4-80GB"));
  const auto full = m.attention_forward(2, 16, 16, 2048, 2048, 128, false, DType::BF16);
  const auto causal = m.attention_forward(2, 16, 16, 2048, 2048, 128, true, DType::BF16);
  EXPECT_DOUBLE_EQ(causal.flops * 2, full.flops);
  EXPECT_DOUBLE_EQ(full.flops, 4.0 * 2 * 16 * 2048 * 2048 * 128);
  EXPECT_DOUBLE_EQ(m.attention_backward(2, 16, 16, 2048, 2048, 128, true, DType::BF16).flops, 2.5 * causal.flops);
}

TEST(GpuModel, MemoryBoundKernelsRunAtTheAchievableHbmRate) {
  const GpuModel m(gpus().get("H200-SXM-141GB"));
  EXPECT_NEAR(m.memory_bound(1e9).seconds, 1e9 / (4800e9 * 0.866) + 3e-6, 1e-12);
}

TEST(GpuCatalog, BadValuesAreInputErrorsNamingTheKey) {
  const std::string path = testing::TempDir() + "/bad_gpu.yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("name: X\narchitecture: x\nsm_count: 10\npeak: {bf16: 100 TFLOPS}\n"
             "memory: {capacity: 10 GB, bandwidth: -5 GB/s}\n", f);
  std::fclose(f);
  try {
    hw::GpuCatalog::parse_file(path);
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "memory.bandwidth");
    EXPECT_EQ(e.line(), 5);
  }
}
