// Checks the kernel model against the `gemm`, `attention` and `memory` cases of a validation file
// (shared/validation/cases.yaml, format stacksim-validation/1).
//
// gemm: predicted TFLOP/s = 2mnk / GpuModel::gemm(m, n, k, dtype).seconds / 1e12 (fp8_e4m3fn and
//   other fp8 variants -> fp8).
// memory, stream_copy/mul/add/triad/dot: predicted GB/s = the achievable HBM rate. STREAM counts
//   the bytes each kernel reads plus writes (copy and mul 2 arrays per element, add and triad 3,
//   dot reads 2), so on an HBM-resident array its GB/s is the HBM rate the kernel sustains; the
//   model has one rate for every memory-bound kernel (calibration hbm_efficiency).
// attention (a stacksim extension of the format): op {kernel: flash1 | flash2 | fused, batch, heads,
//   kv_heads (optional), seq, head_dim, causal, pass: forward | backward | forward+backward, dtype}:
//   predicted TFLOP/s as FlashAttention's benchmark scripts count them (forward 4*b*h*s^2*d, halved
//   when causal; backward 2.5x) over GpuModel::attention_forward/backward's seconds.
// memory, h2d/d2h/d2d_copy: host and peer copies cross PCIe / NVLink, which the GPU profile does not
//   describe; they are reported as not modelled here (the topology model owns those links).
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "models/hardware/gpu_spec.hpp"

namespace stacksim::compute {

struct KernelCaseResult {
  std::string id, kind, op;  // op: the case's op.name (gemm, stream_copy, h2d, ...)
  std::string metric;        // "tflops" (gemm, attention) or "bandwidth_GBps"
  double predicted = 0, measured = 0;
  double error_pct = 0;  // 100 * (predicted - measured) / measured, when ok()
  std::string error;     // not buildable, and why
  bool ok() const { return error.empty(); }
};

// One case, with the GPU catalogue at hw::default_hardware_dir().
KernelCaseResult predict_kernel_case(const YAML::Node& c);
KernelCaseResult predict_kernel_case(const YAML::Node& c, const hw::GpuCatalog& gpus);

// Every gemm, attention and memory case of a cases file, in file order. Throws config::InputError when the
// file cannot be read or is not in the stacksim-validation/1 format.
std::vector<KernelCaseResult> validate_kernel_cases(const std::string& cases_path, const hw::GpuCatalog& gpus);

struct KernelValidationSummary {
  size_t cases = 0;         // predicted cases in the group
  size_t not_modelled = 0;  // cases of the group that returned an error
  double mape_pct = 0, max_abs_error_pct = 0;
};
// Summary of one group of results: "gemm" (kind gemm), "stream" (op stream_*) or "" (all).
KernelValidationSummary summarize_kernel_cases(const std::vector<KernelCaseResult>& results, const std::string& group);

}  // namespace stacksim::compute
