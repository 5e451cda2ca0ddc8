// GPU profiles, read from models/hardware/gpus/*.yaml. Physical figures come from sourced specs
// (../shared/hardware/specs.yaml); the `calibration:` section holds achievable fractions measured
// on real machines (MAMF GEMM sweeps, STREAM, nvbandwidth, launch-overhead measurements) or fitted
// by `stacksim calibrate` from probe measurements. One profile per GPU, the same for every job.
//
//   name: H100-SXM5-80GB
//   aliases: [H100, H100-SXM]
//   architecture: hopper
//   sm_count: 132
//   peak: {fp32: 67 TFLOPS, tf32: 494.5 TFLOPS, fp16: 989 TFLOPS, bf16: 989 TFLOPS, fp8: 1979 TFLOPS}
//   memory: {capacity: 80 GB, bandwidth: 3.35 TB/s}
//   l2_cache: 50 MB
//   calibration:
//     gemm_max_efficiency: {bf16: 0.80, fp16: 0.80, fp8: 0.71, tf32: 0.75}  # MAMF / peak
//     hbm_efficiency: 0.89          # STREAM copy / peak
//     kernel_overhead: 4 us         # per-kernel floor (launch + prologue)
//     attention_efficiency: {forward: 0.55, backward: 0.45}  # best fused attention (cuDNN/FA3) / peak
//     flash2_efficiency: {forward: 0.35, backward: 0.28}     # FlashAttention-2 kernels / peak
//   sources: [...]
#pragma once
#include <map>
#include <string>
#include <vector>

namespace stacksim::hw {

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string architecture;
  int sm_count = 0;
  std::map<std::string, double> peak_flops_per_s;  // fp32, tf32, fp16, bf16, fp8 (dense)
  double memory_bytes = 0;
  double hbm_Bps = 0;
  double l2_bytes = 0;
  // calibration
  std::map<std::string, double> gemm_max_efficiency;  // per dtype
  double hbm_efficiency = 0.85;
  double kernel_overhead_s = 4e-6;
  double attention_forward_efficiency = 0.5;    // best fused kernels (cuDNN, FlashAttention-3)
  double attention_backward_efficiency = 0.4;
  double flash2_forward_efficiency = 0.5;       // FlashAttention-2-class kernels
  double flash2_backward_efficiency = 0.4;
  std::string file;

  double peak(const std::string& dtype) const;            // 0 if unsupported
  double max_efficiency(const std::string& dtype) const;
};

class GpuCatalog {
 public:
  static GpuCatalog load_dir(const std::string& hardware_dir);  // <dir>/gpus/*.yaml
  static GpuSpec parse_file(const std::string& path);
  void add(const GpuSpec& spec);
  const GpuSpec& get(const std::string& name) const;  // name or alias; InputError with suggestion
  bool has(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, std::string> alias_;
};

}  // namespace stacksim::hw
