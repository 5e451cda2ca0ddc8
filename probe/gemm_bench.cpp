// GEMM throughput through cuBLASLt, the library training frameworks call (DeepBench's argument for
// vendor libraries, ANCHORS.md section 7).
//
// Dtypes: bf16 and fp16 (fp32 accumulate), tf32 (fp32 data, CUBLAS_COMPUTE_32F_FAST_TF32) and fp8
// e4m3 with bf16 output (compute capability >= 8.9 only). Layout "TN" (A transposed, column major),
// the one layout cuBLASLt's fp8 kernels accept, used for every dtype so they compare alike.
// Shapes: a square sweep 256..16384, then transformer shapes m = tokens (4096, 8192, 16384),
// n = hidden (4096, 8192), k = 128..8192 and 4 x hidden (the K sweep identifies k_half).
// Inputs are random (hash fill); each call uses the next of several A/B buffer sets whose total
// exceeds 4x L2, so operands are not L2-hot (mamf-finder and nvbench flush L2 for the same reason).
// Before the sweep a sustained bf16 GEMM pre-conditions the GPU to its steady clock and power
// (gpu-burn's role, ANCHORS.md section 5); the steady SM clock is recorded in the machine section.
// Time: CUDA events around batches of >= 1 ms, median of 5; the record holds m, n, k and seconds
// per GEMM (2mnk FLOPs), the calibrator derives TFLOP/s.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe/benchmarks.hpp"
#include "probe/kernels.hpp"

namespace stacksim::probe {
namespace {

struct DtypeSpec {
  const char* name;
  cudaDataType_t ab_type;
  cudaDataType_t cd_type;
  cublasComputeType_t compute;
  FillType fill;
  size_t ab_bytes;
  size_t cd_bytes;
  int min_cc;
};

constexpr DtypeSpec kDtypes[] = {
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, FillType::BF16, 2, 2, 80},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, FillType::F16, 2, 2, 70},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, FillType::F32, 4, 4, 80},
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, FillType::FP8E4M3, 1, 2, 89},
};

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct Shape {
  int64_t m, n, k;
};

// One GEMM problem with its buffers and the heuristic's best algorithm.
class Gemm {
 public:
  Gemm(cublasLtHandle_t handle, const DtypeSpec& d, const Shape& s, size_t l2_bytes, void* workspace,
       cudaStream_t stream)
      : handle_(handle), workspace_(workspace), stream_(stream) {
    a_bytes_ = size_t(s.m) * s.k * d.ab_bytes;
    b_bytes_ = size_t(s.k) * s.n * d.ab_bytes;
    sets_ = static_cast<int>(std::clamp<double>(std::ceil(4.0 * l2_bytes / double(a_bytes_ + b_bytes_)), 1, 8));
    PROBE_CUDA(cudaMalloc(&a_, a_bytes_ * sets_));
    PROBE_CUDA(cudaMalloc(&b_, b_bytes_ * sets_));
    PROBE_CUDA(cudaMalloc(&c_, size_t(s.m) * s.n * d.cd_bytes));
    launch_fill(a_, a_bytes_ * sets_ / d.ab_bytes, d.fill, 1, stream);
    launch_fill(b_, b_bytes_ * sets_ / d.ab_bytes, d.fill, 2, stream);
    PROBE_CUBLAS(cublasLtMatmulDescCreate(&desc_, d.compute, CUDA_R_32F));
    const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
    PROBE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
    PROBE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout_, d.ab_type, s.k, s.m, s.k));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&b_layout_, d.ab_type, s.k, s.n, s.k));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&c_layout_, d.cd_type, s.m, s.n, s.m));
    cublasLtMatmulPreference_t pref;
    PROBE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspaceBytes;
    PROBE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_layout_, b_layout_, c_layout_, c_layout_,
                                                             pref, 1, &heuristic_, &returned);
    PROBE_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    ok_ = st == CUBLAS_STATUS_SUCCESS && returned > 0;
  }
  ~Gemm() {
    cublasLtMatrixLayoutDestroy(a_layout_);
    cublasLtMatrixLayoutDestroy(b_layout_);
    cublasLtMatrixLayoutDestroy(c_layout_);
    cublasLtMatmulDescDestroy(desc_);
    cudaFree(a_);
    cudaFree(b_);
    cudaFree(c_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  bool ok() const { return ok_; }
  void run() {
    const float alpha = 1.f, beta = 0.f;
    const int set = next_++ % sets_;
    const char* a = static_cast<const char*>(a_) + size_t(set) * a_bytes_;
    const char* b = static_cast<const char*>(b_) + size_t(set) * b_bytes_;
    PROBE_CUBLAS(cublasLtMatmul(handle_, desc_, &alpha, a, a_layout_, b, b_layout_, &beta, c_, c_layout_, c_, c_layout_,
                                &heuristic_.algo, workspace_, kWorkspaceBytes, stream_));
  }

 private:
  cublasLtHandle_t handle_;
  void* workspace_;
  cudaStream_t stream_;
  size_t a_bytes_ = 0, b_bytes_ = 0;
  int sets_ = 1, next_ = 0;
  void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  bool ok_ = false;
};

std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> v;
  const std::vector<int64_t> squares =
      quick ? std::vector<int64_t>{1024, 4096, 8192} : std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
  for (int64_t s : squares) v.push_back({s, s, s});
  const std::vector<int64_t> tokens = quick ? std::vector<int64_t>{8192} : std::vector<int64_t>{4096, 8192, 16384};
  const std::vector<int64_t> hidden = quick ? std::vector<int64_t>{8192} : std::vector<int64_t>{4096, 8192};
  const std::vector<int64_t> ks =
      quick ? std::vector<int64_t>{256, 1024, 4096} : std::vector<int64_t>{128, 256, 512, 1024, 2048, 4096, 8192};
  for (int64_t t : tokens)
    for (int64_t h : hidden) {
      for (int64_t k : ks) v.push_back({t, h, k});
      v.push_back({t, h, 4 * h});
    }
  return v;
}

}  // namespace

void run_gemm(const Context& ctx, Output& out) {
  cublasLtHandle_t handle;
  PROBE_CUBLAS(cublasLtCreate(&handle));
  void* workspace;
  PROBE_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));

  {  // pre-condition: sustained bf16 GEMMs until the clock and power settle
    Gemm burn(handle, kDtypes[0], {8192, 8192, 8192}, ctx.l2_bytes, workspace, ctx.stream);
    if (burn.ok()) {
      const double seconds = ctx.options.quick ? 3.0 : 10.0;
      const double t0 = now_s();
      while (now_s() - t0 < seconds) {
        for (int i = 0; i < 20; ++i) burn.run();
        PROBE_CUDA(cudaStreamSynchronize(ctx.stream));
      }
    }
    char hz[32];
    std::snprintf(hz, sizeof hz, "%.6g", measure_sm_clock_hz(ctx.stream));
    out.machine_raw("sm_clock_steady_hz", hz);
  }

  const int reps = ctx.options.quick ? 3 : 5;
  for (const DtypeSpec& d : kDtypes) {
    if (ctx.compute_capability < d.min_cc) {
      out.skip(std::string("gemm.") + d.name,
               "needs compute capability >= " + std::to_string(d.min_cc / 10) + "." + std::to_string(d.min_cc % 10));
      continue;
    }
    for (const Shape& s : shapes(ctx.options.quick)) {
      Gemm g(handle, d, s, ctx.l2_bytes, workspace, ctx.stream);
      if (!g.ok()) {
        out.skip(std::string("gemm.") + d.name, "cuBLASLt found no algorithm for m=" + std::to_string(s.m) +
                                                    " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k));
        continue;
      }
      const Stats st = time_on_stream(
          ctx.stream, [&] { g.run(); }, 3, reps);
      out.add("gemm", Record()
                          .add("dtype", std::string(d.name))
                          .add("m", static_cast<long long>(s.m))
                          .add("n", static_cast<long long>(s.n))
                          .add("k", static_cast<long long>(s.k))
                          .stats(st));
    }
    std::fprintf(stderr, "  gemm %s done\n", d.name);
  }
  PROBE_CUDA(cudaFree(workspace));
  PROBE_CUBLAS(cublasLtDestroy(handle));
}

}  // namespace stacksim::probe
