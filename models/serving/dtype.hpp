// Number formats of a serving deployment (weights, activations, KV cache) and what they cost.
//
//   bf16, fp16      2 bytes, the 16-bit tensor rate
//   fp8             1 byte (E4M3 with per-tensor or per-channel scales), the FP8 tensor rate
//   int8            1 byte (SmoothQuant W8A8), the INT8 tensor rate (= FP8's on Hopper, 2x FP16 on
//                   Ampere/Ada: NVIDIA datasheets)
//   fp4 (nvfp4)     4 bits + one FP8 scale per 16 elements = 4.5 bits; Blackwell's FP4 tensor rate
//                   (2x FP8, the B200/GB200 datasheets); elsewhere weight-only (dequantised to the
//                   activation dtype: the GEMM reads 4.5 bits, computes at the activation rate)
//   int4            weight-only (AWQ/GPTQ, group 128 with 16-bit scale and zero): 4.25 bits read,
//                   computed at the activation dtype's rate
#pragma once
#include <string>

namespace stacksim::hw {
struct GpuSpec;
}

namespace stacksim::serving {

enum class Dtype { BF16, FP16, FP8, INT8, FP4, INT4 };

// bf16, fp16, fp8 (fp8_e4m3), int8 (w8a8), fp4 (nvfp4, mxfp4), int4 (w4a16, awq, gptq);
// std::invalid_argument naming the accepted spellings otherwise.
Dtype parse_dtype(const std::string& s);
const char* dtype_name(Dtype d);
// Storage bytes per element, scales included.
double dtype_bytes(Dtype d);
// The dense tensor-core FLOP/s a GEMM with these weight and activation formats runs at on `gpu`
// (peak, before the GPU's calibrated efficiency): the lower-precision operand sets it where the
// hardware has a matching tensor path, else the activation format's rate (weight-only formats).
// std::invalid_argument when the GPU has no rate for the format (FP8 on an A100).
double tensor_peak_flops_per_s(const hw::GpuSpec& gpu, Dtype weights, Dtype activations);

}  // namespace stacksim::serving
