// Kernel costs on one GPU: a roofline with a shape-aware GEMM efficiency.
//
// GEMM (C[m,n] = A[m,k] B[k,n], 2mnk FLOPs): the model picks, like cuBLAS's heuristics, the fastest
// of a few CUTLASS-style tilings (256x128, 128x256, 128x128, 128x64, 64x128, 64x64), each with
// optional split-K, and charges
//   compute = waves * tile_flops / (per_SM_peak * e_max * e_tile * k/(k + k_half))
// where waves = ceil(tiles / SMs) (wave quantisation; a stream-K variant spreads the last wave at a
// small overhead), e_max is the GPU's measured best-shape efficiency (calibration), e_tile the
// relative efficiency of smaller tiles and k/(k + k_half) the prologue/epilogue cost of short K
// loops. Memory: (mk + kn + mn) elements over the achievable HBM rate. Time = max(compute, memory)
// + the per-kernel floor. Attention: flash-style fused kernels, 4*b*h*sq*skv*d FLOPs forward
// (halved when causal), 2.5x that backward, at the GPU's attention efficiency. Element-wise and
// normalisation kernels: bytes over the achievable HBM rate.
#pragma once
#include <cstdint>
#include <string>

#include "models/hardware/gpu_spec.hpp"

namespace stacksim::compute {

enum class DType { FP32, TF32, FP16, BF16, FP8 };
// Fused attention kernel family: the best available (cuDNN, FlashAttention-3) or FlashAttention-2.
enum class AttentionKernel { Fused, Flash2 };
DType parse_dtype(const std::string& s);  // fp32, tf32, fp16, bf16, fp8 (fp8_e4m3*, fp8_e5m2*)
const char* dtype_name(DType d);
double bytes_per_element(DType d);

struct KernelCost {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
  double efficiency = 0;  // achieved FLOP/s over the dtype's peak
  bool memory_bound = false;
};

class GpuModel {
 public:
  explicit GpuModel(const hw::GpuSpec& spec);

  KernelCost gemm(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch = 1) const;
  KernelCost attention_forward(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                               int64_t head_dim, bool causal, DType dtype,
                               AttentionKernel kernel = AttentionKernel::Fused) const;
  KernelCost attention_backward(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                                int64_t head_dim, bool causal, DType dtype,
                                AttentionKernel kernel = AttentionKernel::Fused) const;
  KernelCost memory_bound(double bytes, double flops = 0) const;
  double kernel_overhead_s() const { return spec_.kernel_overhead_s; }
  double hbm_rate_Bps() const { return spec_.hbm_Bps * spec_.hbm_efficiency; }
  double peak(DType d) const;
  const hw::GpuSpec& spec() const { return spec_; }

 private:
  hw::GpuSpec spec_;
};

}  // namespace stacksim::compute
