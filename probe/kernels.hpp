// Device kernels of stacksim-probe, behind host-side launchers so the rest of the probe is plain C++.
//   HBM: grid-stride 16-byte (float4) read, write, copy and triad kernels, as in the STREAM and
//        Accel-Sim mem_bw designs (ANCHORS.md sections 6 and 8); grid = 8 blocks x SMs x 256 threads.
//   Launch: an empty kernel and a tiny one-block element-wise kernel (the per-kernel floor).
//   Fill: hash-based uniform values in [-1, 1] (random, non-degenerate inputs draw realistic power,
//         ANCHORS.md 9.8) in fp32, fp16, bf16 or fp8 e4m3.
//   Clock: SM cycles against %globaltimer over a ~1 ms spin, for the steady SM clock (as nvbench's
//          throttle detection estimates it).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace stacksim::probe {

enum class HbmKernel { Read, Write, Copy, Triad };
// `bytes_per_array` is rounded down to a multiple of 16. `a`, `b`, `c` are device buffers of that size
// (read: a; write: a; copy: a -> b; triad: a = b + s * c). `sink` is one float the read kernel writes
// only when a sum is impossible, so the loads are not eliminated.
void launch_hbm(HbmKernel kernel, void* a, void* b, void* c, size_t bytes_per_array, float* sink, int sm_count,
                cudaStream_t stream);

void launch_empty(cudaStream_t stream);
void launch_tiny(float* data, cudaStream_t stream);  // data: >= 512 floats

enum class FillType { F32, F16, BF16, FP8E4M3 };
void launch_fill(void* data, size_t elements, FillType type, unsigned seed, cudaStream_t stream);

// Measured SM clock in Hz of the given device (runs a ~1 ms single-block spin on `stream`).
double measure_sm_clock_hz(cudaStream_t stream);

}  // namespace stacksim::probe
