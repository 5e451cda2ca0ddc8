#include "models/compute/gpu_model.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <stdexcept>

namespace stacksim::compute {
namespace {

struct Tile {
  int m, n;
  double efficiency;  // relative to the best (largest) tile: smaller tiles reuse operands less
};
constexpr Tile kTiles[] = {{256, 128, 1.00}, {128, 256, 1.00}, {128, 128, 0.93},
                           {128, 64, 0.82}, {64, 128, 0.82}, {64, 64, 0.65}};
constexpr int kSplits[] = {1, 2, 4, 8};
// Prologue/epilogue of a tile's K loop, in units of K (one ~128-deep pipeline fill).
constexpr double kKHalf = 96.0;
// A stream-K schedule balances the last partial wave at this relative cost.
constexpr double kStreamKOverhead = 1.12;

std::string key(DType d) { return dtype_name(d); }

}  // namespace

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::FP32;
  if (s == "tf32") return DType::TF32;
  if (s == "fp16") return DType::FP16;
  if (s == "bf16") return DType::BF16;
  if (s.rfind("fp8", 0) == 0) return DType::FP8;
  throw std::invalid_argument("unknown dtype '" + s + "' (use fp32, tf32, fp16, bf16 or fp8)");
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::FP32: return "fp32";
    case DType::TF32: return "tf32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
  }
  return "bf16";
}

double bytes_per_element(DType d) {
  switch (d) {
    case DType::FP32: case DType::TF32: return 4;
    case DType::FP16: case DType::BF16: return 2;
    case DType::FP8: return 1;
  }
  return 2;
}

GpuModel::GpuModel(const hw::GpuSpec& spec) : spec_(spec) {}

double GpuModel::peak(DType d) const {
  double p = spec_.peak(key(d));
  if (p <= 0 && d == DType::BF16) p = spec_.peak("fp16");  // V100: no bf16, runs as fp16
  if (p <= 0 && d == DType::FP8) p = spec_.peak("bf16") > 0 ? spec_.peak("bf16") : spec_.peak("fp16");
  if (p <= 0 && d == DType::TF32) p = spec_.peak("fp32");
  return p;
}

KernelCost GpuModel::gemm(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) throw std::invalid_argument("gemm: non-positive shape");
  KernelCost c;
  c.flops = 2.0 * m * n * k * batch;
  const double elem = bytes_per_element(dtype);
  const double out_elem = std::max(2.0, elem);  // FP8 GEMMs write 16-bit outputs
  c.bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n) * elem * batch +
            static_cast<double>(m) * n * out_elem * batch;
  const double peak_sm = peak(dtype) / spec_.sm_count;
  const double e_max = spec_.max_efficiency(key(dtype));
  const double sms = spec_.sm_count;
  double best = std::numeric_limits<double>::infinity();
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(double(m) / t.m) * std::ceil(double(n) / t.n) * batch;
    for (int split : kSplits) {
      if (split > 1 && k / split < 256) continue;
      const double kk = std::ceil(double(k) / split);
      const double units = tiles * split;
      const double tile_time = 2.0 * t.m * t.n * kk / (peak_sm * e_max * t.efficiency * kk / (kk + kKHalf));
      const double waves = std::min(std::ceil(units / sms), kStreamKOverhead * units / sms);
      double time = std::max(1.0, waves) * tile_time;
      if (split > 1) time += static_cast<double>(m) * n * 4.0 * split * batch / hbm_rate_Bps();  // partials
      best = std::min(best, time);
    }
  }
  const double memory = c.bytes / hbm_rate_Bps();
  c.memory_bound = memory > best;
  c.seconds = std::max(best, memory) + spec_.kernel_overhead_s;
  c.efficiency = c.flops / c.seconds / peak(dtype);
  return c;
}

KernelCost GpuModel::attention_forward(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d,
                                       bool causal, DType dtype, AttentionKernel kernel) const {
  KernelCost c;
  c.flops = 4.0 * b * h * sq * skv * d * (causal ? 0.5 : 1.0);
  const double elem = bytes_per_element(dtype == DType::FP8 ? DType::BF16 : dtype);
  c.bytes = (2.0 * b * h * sq * d + 2.0 * b * kvh * skv * d) * elem;  // Q, O and K, V
  const double rate = peak(dtype == DType::FP8 ? DType::BF16 : dtype) *
                      (kernel == AttentionKernel::Flash2 ? spec_.flash2_forward_efficiency : spec_.attention_forward_efficiency);
  const double compute = c.flops / rate, memory = c.bytes / hbm_rate_Bps();
  c.memory_bound = memory > compute;
  c.seconds = std::max(compute, memory) + spec_.kernel_overhead_s;
  c.efficiency = c.flops / c.seconds / peak(DType::BF16);
  return c;
}

KernelCost GpuModel::attention_backward(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d,
                                        bool causal, DType dtype, AttentionKernel kernel) const {
  KernelCost c;
  // dQ, dK, dV and the recomputed scores: 2.5x the forward FLOPs (FlashAttention-2, section 3.2).
  c.flops = 2.5 * 4.0 * b * h * sq * skv * d * (causal ? 0.5 : 1.0);
  const double elem = bytes_per_element(dtype == DType::FP8 ? DType::BF16 : dtype);
  c.bytes = (4.0 * b * h * sq * d + 4.0 * b * kvh * skv * d) * elem;
  const double rate = peak(dtype == DType::FP8 ? DType::BF16 : dtype) *
                      (kernel == AttentionKernel::Flash2 ? spec_.flash2_backward_efficiency : spec_.attention_backward_efficiency);
  const double compute = c.flops / rate, memory = c.bytes / hbm_rate_Bps();
  c.memory_bound = memory > compute;
  c.seconds = std::max(compute, memory) + spec_.kernel_overhead_s;
  c.efficiency = c.flops / c.seconds / peak(DType::BF16);
  return c;
}

KernelCost GpuModel::memory_bound(double bytes, double flops) const {
  KernelCost c;
  c.bytes = bytes;
  c.flops = flops;
  c.memory_bound = true;
  c.seconds = bytes / hbm_rate_Bps() + spec_.kernel_overhead_s;
  return c;
}

}  // namespace stacksim::compute
