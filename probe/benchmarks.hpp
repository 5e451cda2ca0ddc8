// The probe's benchmark groups; each appends records to the output's section(s) of the same name
// (calibration/measurements/README.md lists the record fields, docs/probe.md the methods).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "probe/common.hpp"

namespace stacksim::probe {

struct Context {
  Options options;
  int device = 0;
  int device_count = 1;
  int sm_count = 0;
  size_t l2_bytes = 0;
  size_t memory_bytes = 0;
  int compute_capability = 0;  // major * 10 + minor
  cudaStream_t stream = nullptr;
};

void run_hbm(const Context& ctx, Output& out);                       // section hbm
void run_launch(const Context& ctx, Output& out);                    // section launch
void run_gemm(const Context& ctx, Output& out);                      // section gemm (pre-conditions the GPU first)
void run_pcie(const Context& ctx, Output& out, bool h2d, bool d2h);  // sections h2d, d2h
void run_p2p(const Context& ctx, Output& out);                       // section p2p (>= 2 GPUs)
void run_nccl(const Context& ctx, Output& out);                      // section nccl (>= 2 GPUs, libnccl.so.2)
void run_host_memcpy(const Context& ctx, Output& out);               // section host_memcpy
void run_loader(const Context& ctx, Output& out);                    // section loader

}  // namespace stacksim::probe
