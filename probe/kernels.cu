#include "probe/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "probe/common.hpp"

namespace stacksim::probe {
namespace {

constexpr int kThreads = 256;

__global__ void hbm_read(const float4* __restrict__ a, size_t n, float* sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = a[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -123456.f) *sink = acc;  // never true for the fill values; keeps the loads alive
}

__global__ void hbm_write(float4* __restrict__ a, size_t n) {
  const float4 v = make_float4(1.f, 2.f, 3.f, 4.f);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = v;
}

__global__ void hbm_copy(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

__global__ void hbm_triad(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                          size_t n) {
  const float s = 1.5f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void empty_kernel() {}

__global__ void tiny_kernel(float* data) {
  for (int i = threadIdx.x; i < 512; i += blockDim.x) data[i] = data[i] * 0.999f + 0.001f;
}

__device__ float hash_uniform(size_t i, unsigned seed) {
  unsigned x = static_cast<unsigned>(i) * 2654435761u ^ static_cast<unsigned>(i >> 32) ^ (seed * 0x9E3779B9u);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return static_cast<float>(x) * (2.0f / 4294967295.0f) - 1.0f;
}

__global__ void fill_kernel(void* data, size_t n, int type, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = hash_uniform(i, seed);
    switch (type) {
      case 0:
        static_cast<float*>(data)[i] = v;
        break;
      case 1:
        static_cast<__half*>(data)[i] = __float2half(v);
        break;
      case 2:
        static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
        break;
      default:
        static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(v);
        break;
    }
  }
}

__global__ void clock_kernel(unsigned long long* out) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  t1 = t0;
  while (t1 - t0 < 1000000ull) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  const long long c1 = clock64();
  out[0] = t1 - t0;
  out[1] = static_cast<unsigned long long>(c1 - c0);
}

}  // namespace

void launch_hbm(HbmKernel kernel, void* a, void* b, void* c, size_t bytes_per_array, float* sink, int sm_count,
                cudaStream_t stream) {
  const size_t n = bytes_per_array / sizeof(float4);
  const int blocks = 8 * sm_count;
  switch (kernel) {
    case HbmKernel::Read:
      hbm_read<<<blocks, kThreads, 0, stream>>>(static_cast<const float4*>(a), n, sink);
      break;
    case HbmKernel::Write:
      hbm_write<<<blocks, kThreads, 0, stream>>>(static_cast<float4*>(a), n);
      break;
    case HbmKernel::Copy:
      hbm_copy<<<blocks, kThreads, 0, stream>>>(static_cast<const float4*>(a), static_cast<float4*>(b), n);
      break;
    case HbmKernel::Triad:
      hbm_triad<<<blocks, kThreads, 0, stream>>>(static_cast<float4*>(a), static_cast<const float4*>(b),
                                                 static_cast<const float4*>(c), n);
      break;
  }
  PROBE_CUDA(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) { empty_kernel<<<1, 32, 0, stream>>>(); }

void launch_tiny(float* data, cudaStream_t stream) { tiny_kernel<<<1, 128, 0, stream>>>(data); }

void launch_fill(void* data, size_t elements, FillType type, unsigned seed, cudaStream_t stream) {
  fill_kernel<<<1024, kThreads, 0, stream>>>(data, elements, static_cast<int>(type), seed);
  PROBE_CUDA(cudaGetLastError());
}

double measure_sm_clock_hz(cudaStream_t stream) {
  unsigned long long* d = nullptr;
  PROBE_CUDA(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
  clock_kernel<<<1, 1, 0, stream>>>(d);
  PROBE_CUDA(cudaGetLastError());
  unsigned long long h[2] = {0, 0};
  PROBE_CUDA(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, stream));
  PROBE_CUDA(cudaStreamSynchronize(stream));
  PROBE_CUDA(cudaFree(d));
  return h[0] ? static_cast<double>(h[1]) / static_cast<double>(h[0]) * 1e9 : 0.0;
}

}  // namespace stacksim::probe
