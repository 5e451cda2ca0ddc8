// Roofline kernel model; the model, its constants and their reasons are in gpu_model.hpp.
#include "models/compute/gpu_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace stacksim::compute {
namespace {

struct Tile {
  int m, n;
  double efficiency;  // relative to the largest tiles: smaller tiles reuse each loaded operand less
};
// The 16-row tile (one MMA row block) is what GEMV-like shapes (m = 1..16, decoding) use: its math
// is inefficient, but it does not pay for 64 rows of zero padding while streaming the weights.
constexpr Tile kTiles[] = {{256, 128, 1.00}, {128, 256, 1.00}, {128, 128, 0.93}, {128, 64, 0.82},
                           {64, 128, 0.82},  {64, 64, 0.65},   {16, 128, 0.40}};
constexpr int kSplits[] = {1, 2, 4, 8};
constexpr double kAlignmentBytes = 16;
constexpr double kPartialBytes = 4;  // split-K partial sums are fp32

// Loads and math overlap imperfectly near the ridge point: the time is the quadrature sum of the
// two roofs rather than their maximum (equal to it when either term dominates).
double overlap(double compute_s, double memory_s) { return std::hypot(compute_s, memory_s); }

bool aligned(int64_t elements, double elem_bytes) {
  return std::fmod(static_cast<double>(elements) * elem_bytes, kAlignmentBytes) == 0.0;
}

}  // namespace

// Any case; the framework spellings too (bfloat16, float16, half, float32, float8_e4m3fn, e5m2).
DType parse_dtype(const std::string& written) {
  std::string s;
  for (char c : written)
    if (c != ' ' && c != '-' && c != '_') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "fp32" || s == "float32" || s == "float" || s == "single") return DType::FP32;
  if (s == "tf32" || s == "tensorfloat32") return DType::TF32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::FP16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s.rfind("fp8", 0) == 0 || s.rfind("float8", 0) == 0 || s.find("e4m3") != std::string::npos ||
      s.find("e5m2") != std::string::npos)
    return DType::FP8;
  throw std::invalid_argument("unknown dtype '" + written + "' (use fp32, tf32, fp16, bf16 or fp8)");
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::FP32:
      return "fp32";
    case DType::TF32:
      return "tf32";
    case DType::FP16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    case DType::FP8:
      return "fp8";
  }
  return "bf16";
}

double bytes_per_element(DType d) {
  switch (d) {
    case DType::FP32:
    case DType::TF32:
      return 4;
    case DType::FP16:
    case DType::BF16:
      return 2;
    case DType::FP8:
      return 1;
  }
  return 2;
}

GpuModel::GpuModel(const hw::GpuSpec& spec) : spec_(spec) {
  if (spec_.sm_count <= 0 || spec_.hbm_Bps <= 0 || spec_.hbm_efficiency <= 0)
    throw std::invalid_argument("GPU profile '" + spec_.name + "' lacks SM count or HBM bandwidth");
}

double GpuModel::peak(DType d) const {
  double p = spec_.peak(dtype_name(d));
  if (p <= 0 && d == DType::BF16) p = spec_.peak("fp16");  // V100: no bf16 units, runs as fp16
  if (p <= 0 && d == DType::TF32) p = spec_.peak("fp32");  // no TF32 tensor cores: fp32 vector rate
  if (p <= 0)
    throw std::invalid_argument("GPU '" + spec_.name + "' has no " + dtype_name(d) + " peak in its profile (" +
                                spec_.file + "); use another precision");
  return p;
}

KernelCost GpuModel::gemm(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) throw std::invalid_argument("gemm: non-positive shape");
  KernelCost c;
  const double md = m, nd = n, kd = k, bd = batch;
  c.flops = 2.0 * md * nd * kd * bd;
  const double elem = bytes_per_element(dtype);
  const double out_elem = std::max(2.0, elem);  // FP8 GEMMs write 16-bit outputs
  c.bytes = ((md * kd + kd * nd) * elem + md * nd * out_elem) * bd;
  const double hbm = hbm_rate_Bps();
  const double sms = spec_.sm_count;
  const double align = aligned(k, elem) && aligned(n, elem) ? 1.0 : kMisalignedEfficiency;
  const double rate_sm = peak(dtype) / sms * spec_.max_efficiency(dtype_name(dtype)) * align;
  double best = std::numeric_limits<double>::infinity();
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(md / t.m) * std::ceil(nd / t.n) * bd;
    for (int split : kSplits) {
      if (split > 1 && kd / split < kMinSplitK) continue;
      const double kk = std::ceil(kd / split);
      const double units = tiles * split;
      const double tile_s = 2.0 * t.m * t.n * kk / (rate_sm * t.efficiency) * (kk + kKHalf) / kk;
      const double waves = std::max(1.0, std::min(std::ceil(units / sms), kStreamKOverhead * units / sms));
      const double compute_s = waves * tile_s;
      double bytes = c.bytes;
      if (split > 1) bytes += 2.0 * md * nd * kPartialBytes * split * bd;  // partials out and back in
      const double memory_s = bytes / hbm;
      const double time_s = overlap(compute_s, memory_s);
      if (time_s < best) {
        best = time_s;
        c.memory_bound = memory_s > compute_s;
      }
    }
  }
  c.seconds = best + kGemmFillDrainS + spec_.kernel_overhead_s;
  c.efficiency = c.flops / c.seconds / peak(dtype);
  return c;
}

double GpuModel::gemm_compute_fraction(double m, double n, double k, double elem_bytes) const {
  if (m <= 0 || n <= 0 || k <= 0) return 1;
  const double sms = spec_.sm_count;
  const double align = aligned(static_cast<int64_t>(k), elem_bytes) && aligned(static_cast<int64_t>(n), elem_bytes)
                           ? 1.0
                           : kMisalignedEfficiency;
  double best = std::numeric_limits<double>::infinity();  // in SM-seconds at unit per-SM rate
  for (const Tile& t : kTiles)
    for (int split : kSplits) {
      if (split > 1 && k / split < kMinSplitK) continue;
      const double kk = std::ceil(k / split);
      const double units = std::ceil(m / t.m) * std::ceil(n / t.n) * split;
      const double tile_s = 2.0 * t.m * t.n * kk / t.efficiency * (kk + kKHalf) / kk;
      const double waves = std::max(1.0, std::min(std::ceil(units / sms), kStreamKOverhead * units / sms));
      best = std::min(best, waves * tile_s);
    }
  return std::min(1.0, 2.0 * m * n * k / sms * align / best);
}

namespace {
// Inner-loop iterations of one flash-attention block: the key blocks it visits (the mirror-image
// count in backward), half of them on average under a causal mask.
double key_blocks_per_query_block(int64_t skv, bool causal, int64_t window) {
  const double n = std::ceil(static_cast<double>(skv) / GpuModel::kAttentionBlockKV);
  const double visited = causal ? std::max(1.0, 0.5 * (n + 1)) : n;
  if (window <= 0 || window >= skv) return visited;
  const double span = causal ? window : 2.0 * window + 1.0;  // keys a query may see: behind it, or both sides
  return std::min(visited, std::ceil(span / GpuModel::kAttentionBlockKV) + 1.0);
}

// The share of the sq x skv score matrix computed: half under a causal mask; with a sliding
// window of w < skv keys, the mean over positions i of min(i + 1, w), over skv (causal), or
// min(2w + 1, skv) / skv (bidirectional).
double attended_fraction(int64_t skv, bool causal, int64_t window) {
  if (window <= 0 || window >= skv) return causal ? 0.5 : 1.0;
  const double s = static_cast<double>(skv), w = static_cast<double>(window);
  if (!causal) return std::min(2.0 * w + 1.0, s) / s;
  return (w * (w + 1.0) / 2.0 + (s - w) * w) / (s * s);
}
// The key blocks' worth of scores a query block keeps (its share of the FLOPs): the visited blocks
// less the masked parts of the diagonal (and window-edge) blocks, which are computed and discarded.
double useful_key_blocks_per_query_block(int64_t skv, bool causal, int64_t window) {
  return attended_fraction(skv, causal, window) * static_cast<double>(skv) / GpuModel::kAttentionBlockKV;
}
}  // namespace

KernelCost GpuModel::attention(double flops, double bytes, int64_t work_units, double loop_iterations,
                               double useful_iterations, double efficiency, DType dtype) const {
  KernelCost c;
  c.flops = flops;
  c.bytes = bytes;
  // One query (forward) or key (backward) block per SM at a time: the last wave may be partial.
  const double sms = spec_.sm_count;
  const double units = static_cast<double>(work_units);
  const double wave_fill = units / (std::ceil(units / sms) * sms);
  const double loop_fill = useful_iterations / (loop_iterations + kAttentionTileOverhead);
  const double compute_s = flops / (peak(dtype) * efficiency * wave_fill * loop_fill);
  const double memory_s = bytes / hbm_rate_Bps();
  c.memory_bound = memory_s > compute_s;
  c.seconds = overlap(compute_s, memory_s) + spec_.kernel_overhead_s;
  c.efficiency = c.flops / c.seconds / peak(dtype);
  return c;
}

double GpuModel::attention_efficiency(AttentionKernel k, bool backward) const {
  switch (k) {
    case AttentionKernel::Flash2:
      return backward ? spec_.flash2_backward_efficiency : spec_.flash2_forward_efficiency;
    case AttentionKernel::Flash1: {
      const double e = backward ? spec_.flash1_backward_efficiency : spec_.flash1_forward_efficiency;
      if (e <= 0)
        throw std::invalid_argument("GPU " + spec_.name +
                                    " has no FlashAttention (v1) profile (calibration.flash1_efficiency in " +
                                    spec_.file + "); use model.attention: flash2 or flash");
      return e;
    }
    case AttentionKernel::Fused:
      break;
  }
  return backward ? spec_.attention_backward_efficiency : spec_.attention_forward_efficiency;
}

namespace {
// A flash-attention kernel's softmax work per score (max, exp, rescale) does not grow with the head
// dim d while its tensor-core work does, so its time per score goes as d + c and its rate as
// d / (d + c). The profiles' fractions are for d = 128; c is fitted to cuDNN's fused attention
// measured through SDPA on an H100 at >= 8k tokens (calibration/measurements/*-attention.yaml:
// d = 64 runs at 0.755x forward, 0.816x backward of d = 128's rate): c = 61 forward, 37 backward.
// FlashAttention-2 there: 0.896x / 0.917x, c = 17 / 13. Applied below d = 128 only (no head dim
// above 128 was measured) and to the kernels measured: the original FlashAttention's published runs
// at d = 64 (MPT's 125M/350M rows) show no such loss against the profiles' fractions.
double head_dim_factor(AttentionKernel k, bool backward, int64_t d) {
  if (k == AttentionKernel::Flash1 || d >= 128) return 1.0;
  const double c = k == AttentionKernel::Fused ? (backward ? 37.0 : 61.0) : (backward ? 13.0 : 17.0);
  const double dd = static_cast<double>(d);
  return dd / (dd + c) / (128.0 / (128.0 + c));
}
}  // namespace

KernelCost GpuModel::attention_forward(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d,
                                       bool causal, DType dtype, AttentionKernel kernel, int64_t window) const {
  if (b <= 0 || h <= 0 || kvh <= 0 || sq <= 0 || skv <= 0 || d <= 0)
    throw std::invalid_argument("attention: non-positive shape");
  // FP8 training keeps attention in 16 bit (Transformer Engine default).
  const DType run = dtype == DType::FP8 ? DType::BF16 : dtype;
  const double bd = b, hd = h, kvd = kvh, sqd = sq, skvd = skv, dd = d;
  const double flops = 4.0 * bd * hd * sqd * skvd * dd * attended_fraction(skv, causal, window);
  const double bytes = (2.0 * bd * hd * sqd * dd + 2.0 * bd * kvd * skvd * dd) * bytes_per_element(run);
  const int64_t blocks = b * h * ((sq + kAttentionBlockQ - 1) / kAttentionBlockQ);
  return attention(flops, bytes, blocks, key_blocks_per_query_block(skv, causal, window),
                   useful_key_blocks_per_query_block(skv, causal, window),
                   attention_efficiency(kernel, false) * head_dim_factor(kernel, false, d), run);
}

KernelCost GpuModel::attention_backward(int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d,
                                        bool causal, DType dtype, AttentionKernel kernel, int64_t window) const {
  if (b <= 0 || h <= 0 || kvh <= 0 || sq <= 0 || skv <= 0 || d <= 0)
    throw std::invalid_argument("attention: non-positive shape");
  const DType run = dtype == DType::FP8 ? DType::BF16 : dtype;
  const double bd = b, hd = h, kvd = kvh, sqd = sq, skvd = skv, dd = d;
  // dQ, dK, dV and the recomputed scores: 2.5x the forward FLOPs (FlashAttention-2, section 3.2).
  const double flops = 2.5 * 4.0 * bd * hd * sqd * skvd * dd * attended_fraction(skv, causal, window);
  // Reads Q, O, dO and writes dQ per query head; reads K, V and writes dK, dV per KV head.
  const double bytes = (4.0 * bd * hd * sqd * dd + 4.0 * bd * kvd * skvd * dd) * bytes_per_element(run);
  const int64_t blocks = b * h * ((skv + kAttentionBlockQ - 1) / kAttentionBlockQ);
  return attention(flops, bytes, blocks, key_blocks_per_query_block(skv, causal, window),
                   useful_key_blocks_per_query_block(skv, causal, window),
                   attention_efficiency(kernel, true) * head_dim_factor(kernel, true, d), run);
}

KernelCost GpuModel::memory_bound(double bytes, double flops) const {
  if (bytes < 0 || flops < 0) throw std::invalid_argument("memory_bound: negative bytes or FLOPs");
  KernelCost c;
  c.bytes = bytes;
  c.flops = flops;
  const double vector_rate = spec_.peak("fp32");
  const double compute_s = flops > 0 && vector_rate > 0 ? flops / vector_rate : 0.0;
  const double memory_s = bytes / hbm_rate_Bps();
  c.memory_bound = memory_s >= compute_s;
  c.seconds = overlap(compute_s, memory_s) + spec_.kernel_overhead_s;
  c.efficiency = vector_rate > 0 ? c.flops / c.seconds / vector_rate : 0.0;
  return c;
}

}  // namespace stacksim::compute
