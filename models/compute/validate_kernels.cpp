#include "models/compute/validate_kernels.hpp"

#include <cstdlib>

#include "models/compute/gpu_model.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::compute {
namespace {

const hw::GpuCatalog& gpus() {
  static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(hw::default_hardware_dir());
  return c;
}

}  // namespace

KernelCaseResult predict_kernel_case(const YAML::Node& c) {
  KernelCaseResult r;
  const std::string gpu = c["hardware"]["gpu"].as<std::string>();
  if (!gpus().has(gpu)) {
    r.error = "no GPU profile for '" + gpu + "'";
    return r;
  }
  const GpuModel model(gpus().get(gpu));
  const YAML::Node op = c["op"];
  const std::string kind = c["kind"].as<std::string>();
  const std::string name = op["name"].as<std::string>();
  if (kind == "gemm") {
    r.metric = "tflops";
    r.measured = c["measured"]["tflops"] ? c["measured"]["tflops"].as<double>() : 0;
    const DType d = parse_dtype(op["dtype"].as<std::string>());
    const KernelCost k = model.gemm(op["m"].as<int64_t>(), op["n"].as<int64_t>(), op["k"].as<int64_t>(), d);
    r.predicted = k.flops / k.seconds / 1e12;
    return r;
  }
  r.metric = "bandwidth_GBps";
  r.measured = c["measured"]["bandwidth_GBps"] ? c["measured"]["bandwidth_GBps"].as<double>() : 0;
  if (name.rfind("stream_", 0) == 0) {
    // STREAM on a large array (HBM-resident): the achieved rate is the achievable HBM rate; the
    // benchmark counts the bytes each kernel reads and writes.
    r.predicted = model.hbm_rate_Bps() / 1e9;
    return r;
  }
  r.error = "host/peer copy cases (" + name + ") are validated by the host model, not the kernel model";
  return r;
}

}  // namespace stacksim::compute
