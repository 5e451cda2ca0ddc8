// Kernel-case validation (conventions in validate_kernels.hpp).
#include "validate/kernel_cases.hpp"

#include <algorithm>
#include <cmath>

#include "config/cases_file.hpp"
#include "config/yaml.hpp"
#include "models/compute/gpu_model.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::compute {
namespace {

std::string text(const YAML::Node& n) { return n && n.IsScalar() ? n.as<std::string>() : ""; }

// An attention benchmark's TFLOP/s as FlashAttention's benchmarks count it: forward 4*b*h*s^2*d,
// halved when causal, backward 2.5x that; over the modelled forward, backward or both.
double attention_tflops(const GpuModel& model, const YAML::Node& op, std::string& error) {
  for (const char* key : {"kernel", "batch", "heads", "seq", "head_dim", "causal", "pass", "dtype"})
    if (!op[key] || op[key].IsNull()) {
      error = std::string("the attention case does not state op.") + key;
      return 0;
    }
  const std::string name = text(op["kernel"]);
  AttentionKernel kernel;
  if (name == "flash2")
    kernel = AttentionKernel::Flash2;
  else if (name == "flash1")
    kernel = AttentionKernel::Flash1;
  else if (name == "fused")
    kernel = AttentionKernel::Fused;
  else {
    error = "op.kernel '" + name + "' is not flash1, flash2 or fused";
    return 0;
  }
  const std::string pass = text(op["pass"]);
  if (pass != "forward" && pass != "backward" && pass != "forward+backward") {
    error = "op.pass '" + pass + "' is not forward, backward or forward+backward";
    return 0;
  }
  const int64_t b = op["batch"].as<int64_t>(), h = op["heads"].as<int64_t>(), s = op["seq"].as<int64_t>(),
                d = op["head_dim"].as<int64_t>();
  const int64_t kvh = op["kv_heads"] && !op["kv_heads"].IsNull() ? op["kv_heads"].as<int64_t>() : h;
  const bool causal = op["causal"].as<bool>();
  const DType dtype = parse_dtype(text(op["dtype"]));
  const double forward_flops = 4.0 * b * h * static_cast<double>(s) * s * d / (causal ? 2.0 : 1.0);
  double flops = 0, seconds = 0;
  if (pass != "backward") {
    flops += forward_flops;
    seconds += model.attention_forward(b, h, kvh, s, s, d, causal, dtype, kernel).seconds;
  }
  if (pass != "forward") {
    flops += 2.5 * forward_flops;
    seconds += model.attention_backward(b, h, kvh, s, s, d, causal, dtype, kernel).seconds;
  }
  return flops / seconds / 1e12;
}

}  // namespace

KernelCaseResult predict_kernel_case(const YAML::Node& c) { return predict_kernel_case(c, hw::bundled_gpus()); }

KernelCaseResult predict_kernel_case(const YAML::Node& c, const hw::GpuCatalog& gpus) {
  KernelCaseResult r;
  r.id = text(c["id"]);
  r.kind = text(c["kind"]);
  const YAML::Node op = c["op"];
  r.op = op ? text(op["name"]) : "";
  const YAML::Node measured = c["measured"];
  r.metric = r.kind == "gemm" || r.kind == "attention" ? "tflops" : "bandwidth_GBps";
  const YAML::Node value = measured ? measured[r.metric] : YAML::Node();
  r.measured = value && value.IsScalar() ? value.as<double>() : 0.0;
  try {
    if (r.kind != "gemm" && r.kind != "memory" && r.kind != "attention") {
      r.error = "not a kernel case (kind '" + r.kind + "')";
      return r;
    }
    const std::string gpu = c["hardware"] ? text(c["hardware"]["gpu"]) : "";
    if (!gpus.has(gpu)) {
      r.error = "no GPU profile for '" + gpu + "' (add models/hardware/gpus/<name>.yaml)";
      return r;
    }
    const GpuModel model(gpus.get(gpu));
    if (r.kind == "gemm") {
      for (const char* key : {"m", "n", "k", "dtype"})
        if (!op[key] || op[key].IsNull()) {
          r.error = std::string("the GEMM case does not state op.") + key;
          return r;
        }
      const DType d = parse_dtype(op["dtype"].as<std::string>());
      const KernelCost k = model.gemm(op["m"].as<int64_t>(), op["n"].as<int64_t>(), op["k"].as<int64_t>(), d);
      r.predicted = k.flops / k.seconds / 1e12;
    } else if (r.kind == "attention") {
      r.predicted = attention_tflops(model, op, r.error);
      if (!r.error.empty()) return r;
    } else if (r.op.rfind("stream_", 0) == 0) {
      r.predicted = model.hbm_rate_Bps() / 1e9;
    } else if (r.op.empty()) {
      r.error = "op.name is null";
      return r;
    } else {
      r.error = "op '" + r.op + "' is neither a GEMM nor a STREAM kernel: not modelled by the kernel model";
      return r;
    }
  } catch (const std::exception& e) {
    r.error = e.what();
    return r;
  }
  if (!(r.measured > 0)) {
    r.error = "the case has no positive measured." + r.metric;
    return r;
  }
  r.error_pct = 100.0 * (r.predicted - r.measured) / r.measured;
  return r;
}

std::vector<KernelCaseResult> validate_kernel_cases(const std::string& cases_path, const hw::GpuCatalog& gpus) {
  const config::Node cases = config::load_validation_cases(cases_path);
  std::vector<KernelCaseResult> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node c = cases.at(i).yaml();
    const std::string kind = text(c["kind"]);
    if (kind == "gemm" || kind == "memory" || kind == "attention") out.push_back(predict_kernel_case(c, gpus));
  }
  return out;
}

KernelValidationSummary summarize_kernel_cases(const std::vector<KernelCaseResult>& results, const std::string& group) {
  KernelValidationSummary s;
  double sum = 0;
  for (const auto& r : results) {
    const bool in =
        group.empty() || (group == "gemm" && r.kind == "gemm") || (group == "stream" && r.op.rfind("stream_", 0) == 0);
    if (!in) continue;
    if (!r.ok()) {
      ++s.not_modelled;
      continue;
    }
    ++s.cases;
    sum += std::fabs(r.error_pct);
    s.max_abs_error_pct = std::max(s.max_abs_error_pct, std::fabs(r.error_pct));
  }
  s.mape_pct = s.cases ? sum / s.cases : 0.0;
  return s;
}

}  // namespace stacksim::compute
