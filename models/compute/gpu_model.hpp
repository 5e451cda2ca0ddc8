// Kernel costs on one GPU: a roofline with a shape-aware GEMM efficiency.
//
// GEMM (C[m,n] = A[m,k] B[k,n], 2mnk FLOPs). Like cuBLAS's heuristics, the model takes the fastest
// of a few CUTLASS-style tilings (256x128, 128x256, 128x128, 128x64, 64x128, 64x64, 16x128), each with
// optional split-K (K/split >= 256; fp32 partials written and read back), and charges
//   compute = waves * 2*tm*tn*kk / (per_SM_peak * e_max * e_tile * e_align) * (kk + k_half)/kk
//   memory  = (mk + kn) * elem + mn * out_elem (+ split-K partials), over the achievable HBM rate
//   time    = sqrt(compute^2 + memory^2) + fill/drain + per-kernel floor
// where waves = ceil(tiles*split / SMs) (wave quantisation; a stream-K schedule may instead spread
// the work evenly at a 12 % cost), tiles count partial edge tiles as whole ones (tile
// quantisation), e_max is the GPU's measured best-shape efficiency (calibration: MAMF), e_tile the
// relative efficiency of smaller tiles (less operand reuse per loaded byte), (kk + k_half)/kk the
// prologue/epilogue of short K loops, and e_align a penalty when a leading dimension (k or n) is
// not a multiple of 16 bytes (no 16-byte vector/TMA loads). The quadrature sum instead of max()
// models the imperfect overlap of loads and math near the ridge point: a tall-skinny GEMM such as
// 802816x192x768 runs ~35 % below both roofs on A100 and H100. Constants are the same for every
// GPU; only the calibration fractions are per GPU (see models/hardware/gpu_spec.hpp).
//
// Attention: flash-style fused kernels. Forward FLOPs 4*b*h*sq*skv*d (halved when causal),
// backward 2.5x forward (dQ, dK, dV and the recomputed P; FlashAttention-2, section 3.2), at the
// GPU's attention efficiency, with wave quantisation over (b*h*ceil(sq/128)) query blocks. The
// calibrated efficiency is the long-sequence plateau: each query block (key block in backward)
// visits v key blocks (n = skv/128, (n + 1)/2 on average when causal), of which u are kept (n/2
// when causal: the diagonal block is computed whole and its masked half discarded), and pays a
// fixed prologue and epilogue (load Q, rescale and write O) worth kAttentionTileOverhead loop
// iterations, so the kernel reaches u / (v + kAttentionTileOverhead) of the plateau. The
// published sweeps over sequence length at 16k tokens per batch (H100, head dim 128; forward,
// 512 vs 16k: FlashAttention-2 causal 191/335, non-causal 309/370; FlashAttention-3 causal
// 292/616, non-causal 467/648) give 1.1 / 0.8 and 1.85 / 1.6 iterations; 1.3 is used for every
// kernel (each ratio within 15 %). HBM traffic: Q, O (and dO, dQ) per query
// head, K, V (and dK, dV) per KV head. A sliding window of w keys (w < skv; FlashAttention-2's
// window_size, cuDNN's sliding window) leaves each causal query min(position + 1, w) keys: the
// FLOPs shrink by that average over skv, and each query block visits ceil(w/128) + 1 key blocks
// (ceil((2w + 1)/128) + 1 without the causal mask). The efficiencies are for head dim 128; the fused
// and FlashAttention-2 kernels lose (d / (d + c)) / (128 / (128 + c)) of them below it (softmax
// work per score is fixed while tensor-core work grows with d; c measured on an H100, gpu_model.cpp).
//
// Memory-bound kernels (element-wise, norms, softmax, optimizer): bytes over the achievable HBM
// rate, combined with any FLOPs at the fp32 vector rate the same way as above.
#pragma once
#include <cstdint>
#include <string>

#include "models/hardware/gpu_spec.hpp"

namespace stacksim::compute {

enum class DType { FP32, TF32, FP16, BF16, FP8 };
// Fused attention kernel family: the best available (cuDNN, FlashAttention-3) or FlashAttention-2.
enum class AttentionKernel { Fused, Flash2, Flash1 };
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
                               AttentionKernel kernel = AttentionKernel::Fused, int64_t window = 0) const;
  KernelCost attention_backward(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                                int64_t head_dim, bool causal, DType dtype,
                                AttentionKernel kernel = AttentionKernel::Fused, int64_t window = 0) const;
  KernelCost memory_bound(double bytes, double flops = 0) const;
  // The share of the GPU's best-shape GEMM rate the best tiling of an m x n x k GEMM reaches on
  // the compute side alone (tile and wave quantisation, short-K prologue/epilogue, alignment of
  // `elem_bytes` operands): 1 for large square shapes, less for skinny ones. For callers that
  // charge the operands' bytes themselves (serving's quantised formats).
  double gemm_compute_fraction(double m, double n, double k, double elem_bytes) const;
  double kernel_overhead_s() const { return spec_.kernel_overhead_s; }
  double hbm_rate_Bps() const { return spec_.hbm_Bps * spec_.hbm_efficiency; }
  // Dense peak FLOP/s for a dtype; bf16 falls back to fp16 (V100), tf32 to fp32. Throws
  // std::invalid_argument when the GPU has no rate for the dtype (FP8 on A100).
  double peak(DType d) const;
  const hw::GpuSpec& spec() const { return spec_; }

  // Model constants shared by every GPU (see the header comment).
  static constexpr double kKHalf = 96.0;                 // K-loop prologue/epilogue, in K elements
  static constexpr double kStreamKOverhead = 1.12;       // stream-K cost of balancing the last wave
  static constexpr double kGemmFillDrainS = 2e-6;        // pipeline fill and last epilogue of a GEMM
  static constexpr double kMisalignedEfficiency = 0.8;   // k or n not a multiple of 16 bytes
  static constexpr double kMinSplitK = 256;              // shortest K slice of a split-K GEMM
  static constexpr int kAttentionBlockQ = 128;           // query rows per flash-attention block
  static constexpr int kAttentionBlockKV = 128;          // key rows per inner-loop iteration
  static constexpr double kAttentionTileOverhead = 1.3;  // per-block fixed cost, in loop iterations

 private:
  KernelCost attention(double flops, double bytes, int64_t work_units, double loop_iterations, double useful_iterations,
                       double efficiency, DType dtype) const;
  // Fraction of the peak a kernel reaches; throws when the GPU has no profile for the kernel.
  double attention_efficiency(AttentionKernel k, bool backward) const;
  hw::GpuSpec spec_;
};

}  // namespace stacksim::compute
