// HBM bandwidth and kernel-launch overhead on one GPU.
//
// HBM: read, write, copy and triad kernels (probe/kernels.cu) over working sets from 1 MiB
// (L2-resident) to a few GiB (>= 8x any current L2), events around batches of >= 1 ms, median of 7.
// Bytes counted are the bytes that cross HBM per call: read N, write N, copy 2N (read + write, as
// bandwidthTest's D2D), triad 3N. The calibrator fits t = t0 + bytes / BW on sizes >= 4x L2.
//
// Launch: five modes, each timed over N = 1000..20000 kernels so the calibrator can fit
// t = t0 + N * c (c = per-kernel cost, t0 = the window's fixed cost):
//   empty  back-to-back empty kernels, CUDA events (GPU-side launch rate)
//   tiny   back-to-back one-block element-wise kernels: the per-kernel floor the simulator charges
//   graph  the same tiny kernels captured once into a CUDA graph and replayed
//   host   host API time of N launches only (steady_clock, synchronised after the window)
//   sync   N launch + cudaStreamSynchronize round trips (steady_clock)
#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe/benchmarks.hpp"
#include "probe/kernels.hpp"

namespace stacksim::probe {

void run_hbm(const Context& ctx, Output& out) {
  size_t free_bytes = 0, total_bytes = 0;
  PROBE_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t max_array = size_t(1) << 20;
  const size_t cap = std::min<size_t>(size_t(4) << 30, free_bytes / 5);  // three arrays, with headroom
  while (max_array * 2 <= cap) max_array *= 2;
  void *a, *b, *c;
  float* sink;
  PROBE_CUDA(cudaMalloc(&a, max_array));
  PROBE_CUDA(cudaMalloc(&b, max_array));
  PROBE_CUDA(cudaMalloc(&c, max_array));
  PROBE_CUDA(cudaMalloc(&sink, sizeof(float)));
  for (void* p : {a, b, c}) launch_fill(p, max_array / sizeof(float), FillType::F32, 7, ctx.stream);
  struct Kind {
    HbmKernel kernel;
    const char* name;
    double bytes_factor;
  };
  const Kind kinds[] = {{HbmKernel::Read, "read", 1},
                        {HbmKernel::Write, "write", 1},
                        {HbmKernel::Copy, "copy", 2},
                        {HbmKernel::Triad, "triad", 3}};
  const int reps = ctx.options.quick ? 5 : 7;
  const size_t step = ctx.options.quick ? 4 : 2;
  for (const Kind& k : kinds) {
    for (size_t bytes = size_t(1) << 20; bytes <= max_array; bytes *= step) {
      const Stats s = time_on_stream(
          ctx.stream, [&] { launch_hbm(k.kernel, a, b, c, bytes, sink, ctx.sm_count, ctx.stream); }, 3, reps);
      out.add("hbm", Record().add("kernel", std::string(k.name)).add("bytes", k.bytes_factor * double(bytes)).stats(s));
    }
    std::fprintf(stderr, "  hbm %s done\n", k.name);
  }
  for (void* p : {a, b, c}) PROBE_CUDA(cudaFree(p));
  PROBE_CUDA(cudaFree(sink));
}

void run_launch(const Context& ctx, Output& out) {
  float* data;
  PROBE_CUDA(cudaMalloc(&data, 512 * sizeof(float)));
  PROBE_CUDA(cudaMemsetAsync(data, 0, 512 * sizeof(float), ctx.stream));
  const std::vector<int> counts =
      ctx.options.quick ? std::vector<int>{1000, 2000, 5000, 10000} : std::vector<int>{1000, 2000, 5000, 10000, 20000};
  const int reps = ctx.options.quick ? 3 : 5;
  cudaEvent_t start, stop;
  PROBE_CUDA(cudaEventCreate(&start));
  PROBE_CUDA(cudaEventCreate(&stop));
  auto event_window = [&](const auto& enqueue) {
    std::vector<double> samples;
    enqueue();  // warm-up window
    PROBE_CUDA(cudaStreamSynchronize(ctx.stream));
    for (int r = 0; r < reps; ++r) {
      PROBE_CUDA(cudaEventRecord(start, ctx.stream));
      enqueue();
      PROBE_CUDA(cudaEventRecord(stop, ctx.stream));
      PROBE_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      PROBE_CUDA(cudaEventElapsedTime(&ms, start, stop));
      samples.push_back(ms * 1e-3);
    }
    return summarize(samples);
  };
  auto record = [&](const char* mode, int n, const Stats& s) {
    out.add("launch", Record().add("mode", std::string(mode)).add("kernels", static_cast<long long>(n)).stats(s));
  };
  for (int n : counts) {
    record("empty", n, event_window([&] {
             for (int i = 0; i < n; ++i) launch_empty(ctx.stream);
             PROBE_CUDA(cudaGetLastError());
           }));
    record("tiny", n, event_window([&] {
             for (int i = 0; i < n; ++i) launch_tiny(data, ctx.stream);
             PROBE_CUDA(cudaGetLastError());
           }));

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    PROBE_CUDA(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < n; ++i) launch_tiny(data, ctx.stream);
    PROBE_CUDA(cudaStreamEndCapture(ctx.stream, &graph));
    PROBE_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    record("graph", n, event_window([&] { PROBE_CUDA(cudaGraphLaunch(exec, ctx.stream)); }));
    PROBE_CUDA(cudaGraphExecDestroy(exec));
    PROBE_CUDA(cudaGraphDestroy(graph));

    std::vector<double> host;
    for (int r = 0; r <= reps; ++r) {
      const double t0 = now_s();
      for (int i = 0; i < n; ++i) launch_empty(ctx.stream);
      const double t1 = now_s();
      PROBE_CUDA(cudaStreamSynchronize(ctx.stream));
      if (r > 0) host.push_back(t1 - t0);  // r == 0 is the warm-up window
    }
    record("host", n, summarize(host));

    const int round_trips = n / 4;  // 250..5000: each costs ~10 us or more
    std::vector<double> sync;
    for (int r = 0; r <= reps; ++r) {
      const double t0 = now_s();
      for (int i = 0; i < round_trips; ++i) {
        launch_empty(ctx.stream);
        PROBE_CUDA(cudaStreamSynchronize(ctx.stream));
      }
      if (r > 0) sync.push_back(now_s() - t0);
    }
    record("sync", round_trips, summarize(sync));
  }
  PROBE_CUDA(cudaEventDestroy(start));
  PROBE_CUDA(cudaEventDestroy(stop));
  PROBE_CUDA(cudaFree(data));
}

}  // namespace stacksim::probe
