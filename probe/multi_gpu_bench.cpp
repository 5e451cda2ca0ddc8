// Multi-GPU benchmarks; both are skipped, with a note in the output, when only one GPU is visible.
//
// P2P (section p2p): for every ordered pair with peer access, cudaMemcpyPeerAsync (copy engines)
//   4 KiB .. 1 GiB in x4 steps, events on the source GPU's stream around batches of >= 1 ms, median
//   of 5; the calibrator fits t = alpha + bytes / BW per pair (latency from the small sizes, as
//   p2pBandwidthLatencyTest's 16-byte transfers). Pairs without peer access are noted as skipped.
// NCCL (section nccl): single process, all visible GPUs through ncclCommInitAll; libnccl.so.2 is
//   loaded with dlopen, so the probe has no build dependency on NCCL. all_reduce, all_gather and
//   reduce_scatter on float32, 8 B .. 1 GiB (x4). Each sample enqueues `iters` operations (one group
//   call across the GPUs per operation) and synchronises every stream, timed on the host: the mean
//   per operation including enqueue cost, exactly as nccl-tests reports `time` (ANCHORS.md section 1).
//   `bytes` follows nccl-tests' S: the per-rank buffer for all_reduce, the whole gathered array for
//   all_gather and reduce_scatter. Records carry algo: ring when NCCL_ALGO=Ring was set (run the
//   probe twice to separate NVLS/tree gains from ring wire bandwidth).
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe/benchmarks.hpp"

namespace stacksim::probe {
namespace {

// The few NCCL symbols the probe uses, declared with the stable NCCL 2.x C ABI (nccl.h).
using NcclComm = struct ncclComm*;
using NcclResult = int;  // ncclSuccess = 0
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;
struct Nccl {
  void* lib = nullptr;
  NcclResult (*comm_init_all)(NcclComm*, int, const int*) = nullptr;
  NcclResult (*comm_destroy)(NcclComm) = nullptr;
  NcclResult (*all_reduce)(const void*, void*, size_t, int, int, NcclComm, cudaStream_t) = nullptr;
  NcclResult (*all_gather)(const void*, void*, size_t, int, NcclComm, cudaStream_t) = nullptr;
  NcclResult (*reduce_scatter)(const void*, void*, size_t, int, int, NcclComm, cudaStream_t) = nullptr;
  NcclResult (*group_start)() = nullptr;
  NcclResult (*group_end)() = nullptr;
  NcclResult (*get_version)(int*) = nullptr;
  const char* (*error_string)(NcclResult) = nullptr;

  template <class F>
  bool bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  bool load() {
    lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    return bind(comm_init_all, "ncclCommInitAll") && bind(comm_destroy, "ncclCommDestroy") &&
           bind(all_reduce, "ncclAllReduce") && bind(all_gather, "ncclAllGather") &&
           bind(reduce_scatter, "ncclReduceScatter") && bind(group_start, "ncclGroupStart") &&
           bind(group_end, "ncclGroupEnd") && bind(get_version, "ncclGetVersion") &&
           bind(error_string, "ncclGetErrorString");
  }
};

#define PROBE_NCCL(nccl, call)                                                                           \
  do {                                                                                                   \
    const NcclResult probe_r_ = (call);                                                                  \
    if (probe_r_ != 0) ::stacksim::probe::die(#call, (nccl).error_string(probe_r_), __FILE__, __LINE__); \
  } while (0)

bool ring_forced() {
  const char* algo = std::getenv("NCCL_ALGO");
  if (!algo) return false;
  std::string s(algo);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s == "ring";
}

}  // namespace

void run_p2p(const Context& ctx, Output& out) {
  if (ctx.device_count < 2) {
    out.skip("p2p", "one GPU visible");
    return;
  }
  const size_t max_bytes = ctx.options.quick ? (size_t(256) << 20) : (size_t(1) << 30);
  const int n = ctx.device_count;
  std::vector<void*> buffers(n);
  std::vector<cudaStream_t> streams(n);
  for (int d = 0; d < n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    PROBE_CUDA(cudaMalloc(&buffers[d], max_bytes));
    PROBE_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
  }
  const int reps = ctx.options.quick ? 3 : 5;
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      int can = 0;
      PROBE_CUDA(cudaDeviceCanAccessPeer(&can, src, dst));
      if (!can) {
        out.skip("p2p." + std::to_string(src) + "-" + std::to_string(dst), "no peer access between these GPUs");
        continue;
      }
      PROBE_CUDA(cudaSetDevice(src));
      const cudaError_t e = cudaDeviceEnablePeerAccess(dst, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();  // already on: clear the (non-sticky) error
      else
        PROBE_CUDA(e);
      for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        const Stats s = time_on_stream(
            streams[src],
            [&] { PROBE_CUDA(cudaMemcpyPeerAsync(buffers[dst], dst, buffers[src], src, bytes, streams[src])); }, 3,
            reps);
        out.add("p2p", Record()
                           .add("src", static_cast<long long>(src))
                           .add("dst", static_cast<long long>(dst))
                           .add("bytes", static_cast<long long>(bytes))
                           .stats(s));
      }
    }
  for (int d = 0; d < n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    PROBE_CUDA(cudaFree(buffers[d]));
    PROBE_CUDA(cudaStreamDestroy(streams[d]));
  }
  PROBE_CUDA(cudaSetDevice(ctx.device));
  std::fprintf(stderr, "  p2p done\n");
}

void run_nccl(const Context& ctx, Output& out) {
  if (ctx.device_count < 2) {
    out.skip("nccl", "one GPU visible");
    return;
  }
  Nccl nccl;
  if (!nccl.load()) {
    const char* why = dlerror();
    out.skip("nccl", std::string("libnccl.so.2 not loadable: ") + (why ? why : "missing symbols"));
    return;
  }
  int version = 0;
  PROBE_NCCL(nccl, nccl.get_version(&version));
  out.machine_raw("nccl_version", std::to_string(version));
  const int n = ctx.device_count;
  std::vector<NcclComm> comms(n);
  PROBE_NCCL(nccl, nccl.comm_init_all(comms.data(), n, nullptr));
  const size_t max_bytes = ctx.options.quick ? (size_t(256) << 20) : (size_t(1) << 30);
  std::vector<void*> send(n), recv(n);
  std::vector<cudaStream_t> streams(n);
  for (int d = 0; d < n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    PROBE_CUDA(cudaMalloc(&send[d], max_bytes));
    PROBE_CUDA(cudaMalloc(&recv[d], max_bytes));
    PROBE_CUDA(cudaMemset(send[d], 0, max_bytes));
    PROBE_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
  }
  const bool ring = ring_forced();
  const int reps = ctx.options.quick ? 3 : 5;
  for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter"}) {
    for (size_t target = 8; target <= max_bytes; target *= 4) {
      // Element count per rank; `bytes` is nccl-tests' S for the op (see the file comment).
      const bool gathered = op != "all_reduce";
      const size_t count = std::max<size_t>(1, gathered ? target / (4 * n) : target / 4);
      const size_t bytes = gathered ? count * 4 * n : count * 4;
      auto enqueue = [&] {
        PROBE_NCCL(nccl, nccl.group_start());
        for (int d = 0; d < n; ++d) {
          if (op == "all_reduce")
            PROBE_NCCL(nccl, nccl.all_reduce(send[d], recv[d], count, kNcclFloat32, kNcclSum, comms[d], streams[d]));
          else if (op == "all_gather")
            PROBE_NCCL(nccl, nccl.all_gather(send[d], recv[d], count, kNcclFloat32, comms[d], streams[d]));
          else
            PROBE_NCCL(nccl,
                       nccl.reduce_scatter(send[d], recv[d], count, kNcclFloat32, kNcclSum, comms[d], streams[d]));
        }
        PROBE_NCCL(nccl, nccl.group_end());
      };
      auto sync_all = [&] {
        for (int d = 0; d < n; ++d) {
          PROBE_CUDA(cudaSetDevice(d));
          PROBE_CUDA(cudaStreamSynchronize(streams[d]));
        }
      };
      for (int w = 0; w < 5; ++w) enqueue();
      sync_all();
      const int iters = bytes >= (size_t(64) << 20) ? 5 : 20;
      std::vector<double> samples;
      for (int r = 0; r < reps; ++r) {
        const double t0 = now_s();
        for (int i = 0; i < iters; ++i) enqueue();
        sync_all();
        samples.push_back((now_s() - t0) / iters);
      }
      Record rec;
      rec.add("op", op).add("ranks", static_cast<long long>(n)).add("bytes", static_cast<long long>(bytes));
      if (ring) rec.add("algo", std::string("ring"));
      out.add("nccl", rec.stats(summarize(samples)));
    }
    std::fprintf(stderr, "  nccl %s done\n", op.c_str());
  }
  for (int d = 0; d < n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    PROBE_NCCL(nccl, nccl.comm_destroy(comms[d]));
    PROBE_CUDA(cudaFree(send[d]));
    PROBE_CUDA(cudaFree(recv[d]));
    PROBE_CUDA(cudaStreamDestroy(streams[d]));
  }
  PROBE_CUDA(cudaSetDevice(ctx.device));
}

}  // namespace stacksim::probe
