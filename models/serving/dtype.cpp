#include "models/serving/dtype.hpp"

#include <stdexcept>

#include "models/hardware/gpu_spec.hpp"

namespace stacksim::serving {

Dtype parse_dtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return Dtype::BF16;
  if (s == "fp16" || s == "float16" || s == "half") return Dtype::FP16;
  if (s == "fp8" || s == "fp8_e4m3" || s == "e4m3") return Dtype::FP8;
  if (s == "int8" || s == "w8a8") return Dtype::INT8;
  if (s == "fp4" || s == "nvfp4" || s == "mxfp4") return Dtype::FP4;
  if (s == "int4" || s == "w4a16" || s == "awq" || s == "gptq") return Dtype::INT4;
  throw std::invalid_argument("unknown number format '" + s + "' (use bf16, fp16, fp8, int8, fp4 or int4)");
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::BF16:
      return "bf16";
    case Dtype::FP16:
      return "fp16";
    case Dtype::FP8:
      return "fp8";
    case Dtype::INT8:
      return "int8";
    case Dtype::FP4:
      return "fp4";
    case Dtype::INT4:
      return "int4";
  }
  return "?";
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::BF16:
    case Dtype::FP16:
      return 2;
    case Dtype::FP8:
    case Dtype::INT8:
      return 1;
    case Dtype::FP4:
      return 4.5 / 8;  // NVFP4: an E4M3 scale per 16 values
    case Dtype::INT4:
      return 4.25 / 8;  // group 128 with a 16-bit scale and a 16-bit zero point
  }
  return 2;
}

namespace {

// The tensor rate of one format on `gpu`, 0 when it has no such path.
double format_peak(const hw::GpuSpec& gpu, Dtype d) {
  const double f16 = gpu.peak(d == Dtype::FP16 ? "fp16" : "bf16") > 0 ? gpu.peak(d == Dtype::FP16 ? "fp16" : "bf16")
                                                                      : gpu.peak("fp16");
  switch (d) {
    case Dtype::BF16:
    case Dtype::FP16:
      return f16;
    case Dtype::FP8:
      return gpu.peak("fp8");
    case Dtype::INT8:
      // INT8 tensor cores: 2x FP16 on Volta-less Ampere/Ada/Hopper (datasheets: A100 624 TOPS,
      // H100 SXM 1979 TOPS), none on Blackwell's datasheet beyond FP8's rate.
      if (gpu.peak("int8") > 0) return gpu.peak("int8");
      return gpu.architecture == "volta" ? 0 : 2 * gpu.peak("fp16");
    case Dtype::FP4:
      // Blackwell's FP4 tensor cores run at 2x FP8 (B200 9 PF dense vs 4.5 PF FP8: datasheet).
      if (gpu.peak("fp4") > 0) return gpu.peak("fp4");
      return gpu.architecture == "blackwell" ? 2 * gpu.peak("fp8") : 0;
    case Dtype::INT4:
      return 0;  // weight-only everywhere
  }
  return 0;
}

}  // namespace

double tensor_peak_flops_per_s(const hw::GpuSpec& gpu, Dtype weights, Dtype activations) {
  // The activations' format sets the tensor path: W8A8, FP8 and NVFP4 GEMMs quantise both operands;
  // lower-precision weights than activations (W4A16, FP8 weights with 16-bit activations) are
  // dequantised in the kernel and multiplied at the activation rate.
  (void)weights;
  if (activations == Dtype::INT4)
    throw std::invalid_argument("int4 is a weight-only format: activations must be bf16, fp16, fp8, int8 or fp4");
  const double rate = format_peak(gpu, activations);
  if (rate <= 0)
    throw std::invalid_argument(gpu.name + " has no " + std::string(dtype_name(activations)) + " tensor rate");
  return rate;
}

}  // namespace stacksim::serving
