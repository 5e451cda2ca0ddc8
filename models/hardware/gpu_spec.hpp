// GPU profiles, read from models/hardware/gpus/*.yaml (one file per GPU, the same profile for every
// job that uses that GPU). Physical figures come from /work/shared/hardware/specs.yaml (each file's
// `sources` names the ids, or says where a value is an assumption). The `calibration:` section holds
// achievable fractions MEASURED on real machines, never fitted to one validation case:
//   gemm_max_efficiency  per dtype, the fraction of the dense peak at which the GEMM model
//                        reproduces a sustained cuBLASLt sweep's plateau (the mean of Azure's three
//                        largest shapes) where one was measured, else MAMF's best-shape TFLOP/s over
//                        the peak (specs.yaml measured_anchors.gemm_mamf_tflops); `stacksim
//                        calibrate` fits it from the probe's sweep the same way (>= 4 waves).
//                        Unmeasured dtypes and GPUs take their architecture sibling's value, which
//                        the file says.
//   hbm_efficiency       STREAM (mean of copy/mul/add/triad/dot) over the HBM peak.
//   kernel_overhead      per-kernel floor, from the kernel_launch anchors (raw launch ~3 us).
//   attention_efficiency fused (flash-style) attention FLOP rate over the 16-bit peak.
// `stacksim calibrate` writes profiles in this same format from probe measurements.
//
//   name: H100-SXM5-80GB
//   aliases: [H100, H100-SXM]
//   architecture: hopper
//   sm_count: 132
//   boost_clock: 1830 MHz
//   peak: {fp32: 67 TFLOPS, tf32: 494.5 TFLOPS, fp16: 989 TFLOPS, bf16: 989 TFLOPS, fp8: 1979 TFLOPS}
//   memory: {capacity: 80 GB, bandwidth: 3.35 TB/s, type: HBM3}
//   l2_cache: 50 MB
//   tdp: 700 W
//   calibration:
//     gemm_max_efficiency: {bf16: 0.763, fp16: 0.763, fp8: 0.701, tf32: 0.75}
//     hbm_efficiency: 0.89
//     kernel_overhead: 3 us
//     attention_efficiency: {forward: 0.55, backward: 0.45}   # best fused kernels (cuDNN, FA3)
//     flash2_efficiency: {forward: 0.35, backward: 0.28}      # optional: FlashAttention-2 kernels
//     flash1_efficiency: {forward: 0.2, backward: 0.13}       # optional: FlashAttention (v1) kernels
//     source: "..."
//   sources: ["specs.yaml gpus.nvidia_h100_sxm5_80gb (MLE_ACCEL, ...)"]
//
// Aliases resolve to the profile (the validation set writes "A100-SXM4" when the memory size is not
// stated; it maps to A100-SXM4-80GB). An alias or name used twice is an input error.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace stacksim::hw {

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string architecture;
  std::string default_node;  // node type a case or scenario naming only this GPU runs on ("" if none)
  int sm_count = 0;
  double boost_clock_Hz = 0;                       // 0 when the file does not state it
  std::map<std::string, double> peak_flops_per_s;  // fp32, tf32, fp16, bf16, fp8 (dense)
  double memory_bytes = 0;
  double hbm_Bps = 0;
  double l2_bytes = 0;  // 0 when not sourced
  double tdp_W = 0;     // 0 when the file does not state it
  // calibration
  std::map<std::string, double> gemm_max_efficiency;  // per dtype
  double hbm_efficiency = 0.85;
  double kernel_overhead_s = 4e-6;
  double attention_forward_efficiency = 0.5;
  double attention_backward_efficiency = 0.4;
  double flash2_forward_efficiency = 0.5;  // FlashAttention-2-class kernels (defaults to the above)
  double flash2_backward_efficiency = 0.4;
  // The original FlashAttention (Dao et al. 2022); 0 = not profiled for this GPU (it has no kernels
  // for every architecture).
  double flash1_forward_efficiency = 0;
  double flash1_backward_efficiency = 0;
  std::string calibration_source;
  std::vector<std::string> sources;
  std::string file;

  double peak(const std::string& dtype) const;            // 0 if unsupported
  double max_efficiency(const std::string& dtype) const;  // the dtype's, else bf16's (else fp16's)
  // FP8 tensor-core GEMMs take only the TN layout before Blackwell (Transformer Engine writes a
  // transposed copy of each quantised operand there); MXFP8 block scaling needs Blackwell.
  bool fp8_gemm_needs_transpose() const { return architecture == "hopper" || architecture == "ada"; }
  bool supports_mxfp8() const { return architecture == "blackwell"; }
};

class GpuCatalog {
 public:
  static GpuCatalog load_dir(const std::string& hardware_dir);  // <dir>/gpus/*.yaml
  static GpuSpec parse_file(const std::string& path);
  void add(const GpuSpec& spec);
  const GpuSpec& get(const std::string& name) const;  // name or alias; InputError with suggestion
  bool has(const std::string& name) const;
  // The profile a name stands for: its name or an alias, as written or spelled otherwise (any
  // case, spaces or underscores for dashes, a vendor prefix, a memory type after the part:
  // "NVIDIA H100 80GB HBM3" is H100-SXM5-80GB by its alias H100-80GB), else by its part number,
  // memory and form factor ("A100 80GB PCIe" is A100-PCIe-80GB); empty if none or ambiguous.
  std::string resolve(const std::string& name) const;
  std::vector<std::string> names() const;  // profile names, sorted (aliases excluded)

 private:
  struct Parts {
    std::string part, form;
    int memory_gb = 0;
    bool unread = false;  // a word that is none of these nor a memory type ("FAKE", "1TB")
  };
  static std::string spelling(const std::string& name);
  static Parts parts(const std::string& spelled);
  std::string structured_match(const std::string& spelled) const;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, std::string> alias_;
  std::map<std::string, std::string> spelled_;  // spelling(name or alias) -> profile name
};

}  // namespace stacksim::hw
