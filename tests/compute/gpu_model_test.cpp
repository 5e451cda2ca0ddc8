// The kernel model against closed forms and physical limits (tests/validate: against published kernels).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "models/compute/gpu_model.hpp"

using namespace stacksim;
using namespace stacksim::compute;

namespace {

const hw::GpuCatalog& gpus() {
  static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

}  // namespace

TEST(GpuModel, GemmCountsTwoMnkFlops) {
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  EXPECT_DOUBLE_EQ(m.gemm(4096, 2048, 1024, DType::BF16).flops, 2.0 * 4096 * 2048 * 1024);
  EXPECT_DOUBLE_EQ(m.gemm(64, 64, 64, DType::BF16, 3).flops, 3 * 2.0 * 64 * 64 * 64);
  // Bytes: A and B in the input type, C in 16 bit: (mk + kn) * 2 + mn * 2.
  EXPECT_DOUBLE_EQ(m.gemm(4096, 2048, 1024, DType::BF16).bytes, (4096.0 * 1024 + 1024.0 * 2048 + 4096.0 * 2048) * 2);
}

TEST(GpuModel, LargeSquareGemmIsComputeBoundNearTheMeasuredMaximum) {
  // A 16384^3 bf16 GEMM on H100: compute bound, between 60 % of peak and the profile's sustained
  // fraction (MAMF's best shape, 80.3 %, x 0.95) that caps every shape.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const KernelCost c = m.gemm(16384, 16384, 16384, DType::BF16);
  EXPECT_FALSE(c.memory_bound);
  EXPECT_GT(c.efficiency, 0.60);
  EXPECT_LE(c.efficiency, 0.763);
}

TEST(GpuModel, SkinnyGemmIsMemoryBoundAtTheHbmRate) {
  // m = 1..8: the weights (k*n) dominate the bytes and the time is ~ bytes / achievable HBM rate
  // plus the fixed costs. The math of the padded 16-row tiles (64 tiles x 8 K-splits = 5 waves of
  // 4.6 us at 40 % tile efficiency = 23 us) against 80 us of loads adds sqrt(1 + 0.29^2) - 1 = 4 %.
  const GpuModel m(gpus().get("A100-SXM4-80GB"));
  for (int64_t rows : {1, 4, 8}) {
    const KernelCost c = m.gemm(rows, 8192, 8192, DType::BF16);
    EXPECT_TRUE(c.memory_bound) << rows;
    const double bytes = (rows * 8192.0 + 8192.0 * 8192 + rows * 8192.0) * 2;
    const double floor_s = GpuModel::kGemmFillDrainS + m.kernel_overhead_s();
    EXPECT_NEAR(c.seconds - floor_s, bytes / m.hbm_rate_Bps(), 0.06 * bytes / m.hbm_rate_Bps()) << rows;
  }
}

TEST(GpuModel, WaveQuantisationPenalisesOneTileTooMany) {
  // 12 x 11 = 132 tiles of 128x128 fill one wave of H100's 132 SMs exactly; 8 more rows and
  // columns (a 13 x 12 grid) leave a partial second wave: per-FLOP efficiency must drop.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const KernelCost full = m.gemm(128 * 12, 128 * 11, 8192, DType::BF16);
  const KernelCost over = m.gemm(128 * 12 + 8, 128 * 11 + 8, 8192, DType::BF16);
  EXPECT_LT(over.efficiency, full.efficiency * 0.97);
}

TEST(GpuModel, ShortKLoopsAndMisalignedLeadingDimensionsCostEfficiency) {
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  // Same output tile grid, K 512 vs 8192: the prologue/epilogue weighs more on the short loop.
  EXPECT_LT(m.gemm(4096, 4096, 512, DType::BF16).efficiency, m.gemm(4096, 4096, 8192, DType::BF16).efficiency);
  // n = 4095 (not a multiple of 16 bytes in bf16) vs n = 4096: no 16-byte loads.
  EXPECT_LT(m.gemm(4096, 4095, 4096, DType::BF16).efficiency, 0.9 * m.gemm(4096, 4096, 4096, DType::BF16).efficiency);
}

TEST(GpuModel, SplitKHelpsSmallOutputsWithLongK) {
  // 256x256 output (4 tiles of 128x128) with K = 65536: without split-K 4 SMs of 132 work. The
  // model may split K, so it must beat the unsplit single-wave time 2*128*128*K/(SM rate).
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const hw::GpuSpec& s = m.spec();
  const double sm_rate = s.peak("bf16") / s.sm_count * s.max_efficiency("bf16") * 0.93;  // 128x128 tile
  const double unsplit_s = 2.0 * 128 * 128 * 65536 / sm_rate;
  EXPECT_LT(m.gemm(256, 256, 65536, DType::BF16).seconds, 0.5 * unsplit_s);
}

TEST(GpuModel, CausalAttentionHasHalfTheFlops) {
  const GpuModel m(gpus().get("A100-SXM4-80GB"));
  const auto full = m.attention_forward(2, 16, 16, 2048, 2048, 128, false, DType::BF16);
  const auto causal = m.attention_forward(2, 16, 16, 2048, 2048, 128, true, DType::BF16);
  EXPECT_DOUBLE_EQ(causal.flops * 2, full.flops);
  EXPECT_DOUBLE_EQ(full.flops, 4.0 * 2 * 16 * 2048 * 2048 * 128);
  EXPECT_DOUBLE_EQ(m.attention_backward(2, 16, 16, 2048, 2048, 128, true, DType::BF16).flops, 2.5 * causal.flops);
  EXPECT_LT(causal.seconds, full.seconds);
}

TEST(GpuModel, ASlidingWindowComputesOnlyTheKeysInIt) {
  // Causal with a window of w keys: query i attends min(i + 1, w) keys; over s queries that is
  // w(w+1)/2 + (s - w) w of the s^2 score entries.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const int64_t s = 8192, w = 128;
  const auto causal = m.attention_forward(1, 64, 8, s, s, 64, true, DType::BF16);
  const auto windowed = m.attention_forward(1, 64, 8, s, s, 64, true, DType::BF16, AttentionKernel::Fused, w);
  const double pairs = w * (w + 1) / 2.0 + static_cast<double>(s - w) * w;
  EXPECT_DOUBLE_EQ(windowed.flops, 4.0 * 64 * pairs * 64);
  EXPECT_LT(windowed.seconds, causal.seconds / 8);  // 1/32 of the scores, at a lower loop fill
  EXPECT_DOUBLE_EQ(m.attention_backward(1, 64, 8, s, s, 64, true, DType::BF16, AttentionKernel::Fused, w).flops,
                   2.5 * windowed.flops);
  // Bidirectional: 2w + 1 keys per query, over at most ceil((2w + 1)/128) + 1 key blocks; never
  // above the calibrated plateau rate.
  const auto both = m.attention_forward(1, 64, 8, s, s, 64, false, DType::BF16, AttentionKernel::Fused, 1024);
  EXPECT_DOUBLE_EQ(both.flops, 4.0 * 64 * s * (2 * 1024 + 1) * 64);
  EXPECT_LT(both.flops / (both.seconds - m.kernel_overhead_s()), 989e12 * m.spec().attention_forward_efficiency);
  // A window as long as the sequence is no window.
  EXPECT_DOUBLE_EQ(m.attention_forward(1, 64, 8, s, s, 64, true, DType::BF16, AttentionKernel::Fused, s).seconds,
                   causal.seconds);
}

TEST(GpuModel, AttentionRunsAtTheCalibratedRateWhenTheWavesAreFull) {
  // b*h*sq/128 = 4*33*8192/128 = 8448 query blocks = 64 full waves of H100's 132 SMs; the bytes
  // (1.1 GB, 0.37 ms) next to the math (8.3 ms) add 0.1 % in quadrature; each query block loops
  // over n = 64 key blocks and pays 1.3 more for its prologue/epilogue, so
  // time ~ FLOPs / (peak * forward efficiency * 64/65.3) + overhead.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const auto c = m.attention_forward(4, 33, 33, 8192, 8192, 128, false, DType::BF16);
  const double compute_s = c.flops / (989e12 * m.spec().attention_forward_efficiency * 64.0 / 65.3);
  EXPECT_NEAR(c.seconds - m.kernel_overhead_s(), compute_s, 0.005 * compute_s);
}

TEST(GpuModel, NarrowHeadsRunFusedAttentionSlowerPerFlop) {
  // Head dim 64 against 128 at the same FLOPs (twice the heads): cuDNN's fused kernel at
  // (64/125)/(128/189) = 0.756 of the rate forward, (64/101)/(128/165) = 0.817 backward (the H100
  // sweep: 0.755 / 0.816); FlashAttention-2 at 0.896 / 0.916; the original FlashAttention unchanged;
  // head dims above 128 not sped up (none measured).
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  auto ratio = [&](AttentionKernel k, bool backward, int64_t d) {
    // 33 sequences: every head count fills whole waves of the 132 SMs, so only the head dim differs.
    auto run = [&](int64_t heads, int64_t dim) {
      return backward ? m.attention_backward(33, heads, heads, 8192, 8192, dim, true, DType::BF16, k).seconds
                      : m.attention_forward(33, heads, heads, 8192, 8192, dim, true, DType::BF16, k).seconds;
    };
    return run(8, 128) / run(8 * 128 / d, d);  // rate at d over rate at 128, same FLOPs
  };
  EXPECT_NEAR(ratio(AttentionKernel::Fused, false, 64), 0.756, 0.005);
  EXPECT_NEAR(ratio(AttentionKernel::Fused, true, 64), 0.817, 0.005);
  EXPECT_NEAR(ratio(AttentionKernel::Flash2, false, 64), 0.896, 0.005);
  EXPECT_NEAR(ratio(AttentionKernel::Flash2, true, 64), 0.916, 0.005);
  EXPECT_NEAR(ratio(AttentionKernel::Flash1, false, 64), 1.0, 0.005);
  EXPECT_NEAR(ratio(AttentionKernel::Fused, false, 256), 1.0, 0.005);
}

TEST(GpuModel, ShortSequencesRunAttentionBelowThePlateau) {
  // Same tokens (16k) and heads (33: 4224 blocks = 32 full waves either way), sequence 512 vs
  // 16k. Non-causal: the rate ratio is (4/5.3) / (128/129.3) = 0.762, between the FlashAttention-2
  // and -3 papers' H100 sweeps at 16k tokens per batch (309/370 = 0.835, 467/648 = 0.72). Causal:
  // a query block visits 2.5 key blocks of which the diagonal's masked half is discarded,
  // (2/3.8) / (64/65.8) = 0.541 (the papers: 191/335 = 0.570, 292/616 = 0.474). HBM traffic,
  // relatively larger at 512, takes 5-10 % more in quadrature. Both ratios lie within the two
  // papers' (2 % slack), where a per-block overhead of 4 iterations without the masked half gave
  // 0.50 and 0.39.
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  const auto rate = [&](int64_t b, int64_t s, bool causal) {
    const auto c = m.attention_forward(b, 33, 33, s, s, 128, causal, DType::BF16, AttentionKernel::Flash2);
    return c.flops / (c.seconds - m.kernel_overhead_s());
  };
  const double ratio = rate(32, 512, false) / rate(1, 16384, false);
  EXPECT_LT(ratio, 0.762);
  EXPECT_GT(ratio, 0.98 * 0.72);
  const double causal_ratio = rate(32, 512, true) / rate(1, 16384, true);
  EXPECT_LT(causal_ratio, 0.541);
  EXPECT_GT(causal_ratio, 0.98 * 0.474);
  EXPECT_LT(rate(16, 1024, true), rate(16, 1024, false));
}

TEST(GpuModel, OlderFlashAttentionKernelsAreSlowerAndFlash1NeedsAProfile) {
  const GpuModel h100(gpus().get("H100-SXM5-80GB"));
  const std::function<KernelCost(AttentionKernel)> fwd = [&](AttentionKernel k) {
    return h100.attention_forward(4, 32, 32, 4096, 4096, 128, true, DType::BF16, k);
  };
  const std::function<KernelCost(AttentionKernel)> bwd = [&](AttentionKernel k) {
    return h100.attention_backward(4, 32, 32, 4096, 4096, 128, true, DType::BF16, k);
  };
  for (const auto& pass : {fwd, bwd}) {
    EXPECT_LT(pass(AttentionKernel::Fused).seconds, pass(AttentionKernel::Flash2).seconds);
    EXPECT_LT(pass(AttentionKernel::Flash2).seconds, pass(AttentionKernel::Flash1).seconds);
    EXPECT_DOUBLE_EQ(pass(AttentionKernel::Flash1).flops, pass(AttentionKernel::Flash2).flops);  // same math
  }
  // FlashAttention-1 forward at its calibrated fraction of the peak (4*33*4096/128 query blocks are
  // 32 full waves of 132 SMs; causal: 16.5 key blocks per query block on average, 16 of them kept, + 1.3).
  const auto f1 = h100.attention_forward(4, 33, 33, 4096, 4096, 128, true, DType::BF16, AttentionKernel::Flash1);
  EXPECT_NEAR(f1.seconds - h100.kernel_overhead_s(),
              f1.flops / (989e12 * h100.spec().flash1_forward_efficiency * 16.0 / 17.8), 0.01 * f1.seconds);
  // No FlashAttention-1 kernels were ever profiled for Blackwell: a clear refusal, not a guess.
  const GpuModel b200(gpus().get("B200"));
  try {
    b200.attention_forward(1, 8, 8, 1024, 1024, 128, true, DType::BF16, AttentionKernel::Flash1);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("flash1_efficiency"), std::string::npos) << e.what();
  }
}

TEST(GpuModel, MemoryBoundKernelsRunAtTheAchievableHbmRate) {
  // time = bytes / (HBM peak * STREAM fraction) + the per-kernel floor (H200: 4.8 TB/s, 0.866).
  const GpuModel m(gpus().get("H200-SXM-141GB"));
  EXPECT_NEAR(m.memory_bound(1e9).seconds, 1e9 / (4800e9 * 0.866) + m.kernel_overhead_s(), 1e-12);
}

TEST(GpuModel, UnsupportedDtypeIsRejected) {
  const GpuModel m(gpus().get("A100-SXM4-80GB"));  // no FP8 units on Ampere
  EXPECT_THROW(m.gemm(1024, 1024, 1024, DType::FP8), std::invalid_argument);
  EXPECT_EQ(parse_dtype("fp8_e4m3fn"), DType::FP8);
  EXPECT_THROW(parse_dtype("int4"), std::invalid_argument);
}

TEST(GpuModel, DtypesReadInAnyCaseAndTheFrameworksSpellings) {
  EXPECT_EQ(parse_dtype("BF16"), DType::BF16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_THROW(parse_dtype("torch float16"), std::invalid_argument);  // not a dtype spelling
  EXPECT_EQ(parse_dtype("half"), DType::FP16);
  EXPECT_EQ(parse_dtype("Float32"), DType::FP32);
  EXPECT_EQ(parse_dtype("TF32"), DType::TF32);
  EXPECT_EQ(parse_dtype("FP8 (E4M3)"), DType::FP8);
  EXPECT_EQ(parse_dtype("float8_e5m2"), DType::FP8);
  EXPECT_THROW(parse_dtype("int8"), std::invalid_argument);
}

TEST(GpuModel, ComputeFractionIsTheTilingShareOfTheBestShapeRate) {
  const GpuModel m(gpus().get("H100-SXM5-80GB"));
  // 16384^3: whole 256x128 tiles in full waves; only the short-K prologue remains, (k / (k + 96)).
  EXPECT_NEAR(m.gemm_compute_fraction(16384, 16384, 16384, 2), 16384.0 / (16384 + GpuModel::kKHalf), 0.03);
  // Decode-like rows run the 16-row tiles at 40 % of the largest tiles' rate at best.
  EXPECT_LE(m.gemm_compute_fraction(16, 8192, 8192, 1), 0.40 + 1e-9);
  // More rows never lower the share much (tiling only gets easier), and a misaligned k costs 20 %.
  EXPECT_LT(m.gemm_compute_fraction(64, 8192, 8192, 1), m.gemm_compute_fraction(4096, 8192, 8192, 1));
  EXPECT_NEAR(m.gemm_compute_fraction(4096, 8192, 8190, 1) / m.gemm_compute_fraction(4096, 8192, 8192, 1),
              GpuModel::kMisalignedEfficiency, 0.02);
  // The full GEMM model's compute-bound efficiency is the profile's best-shape rate times it.
  const KernelCost c = m.gemm(8192, 8192, 8192, DType::BF16);
  EXPECT_NEAR(c.efficiency, m.spec().max_efficiency("bf16") * m.gemm_compute_fraction(8192, 8192, 8192, 2), 0.03);
}
