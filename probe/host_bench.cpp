// Host-side benchmarks: PCIe copies, host memory bandwidth and a data-loader kernel.
//
// PCIe (sections h2d, d2h), sizes 4 KiB .. 1 GiB in x4 steps:
//   pinned    cudaHostAlloc buffers, cudaMemcpyAsync on the copy engines, CUDA events around
//             batches of >= 1 ms, median of 7 (nvbandwidth's CE method, without its spin gate)
//   pageable  malloc'd buffers, synchronous cudaMemcpy timed with steady_clock, one copy per sample,
//             a 64 MiB host write between samples to flush the CPU caches (bandwidthTest's method,
//             kept because nvbandwidth has no pageable case; ANCHORS.md section 3)
// Host memcpy (section host_memcpy): T threads each memcpy a slice of one 64 MiB .. 1 GiB buffer
//   (larger than any LLC), threads released together from a spin flag so creation is not timed;
//   bytes counted once, as STREAM's copy. T = 1, cores/2, cores.
// Loader (section loader): per image, crop a 224x224 window from a 256x256x3 uint8 "decoded" image,
//   random horizontal flip, HWC -> CHW and per-channel normalisation to float ((x/255 - mean)/std),
//   the CPU work of a torchvision-style transform after JPEG decode. T threads share the images.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "probe/benchmarks.hpp"

namespace stacksim::probe {
namespace {

std::vector<size_t> pcie_sizes(bool quick) {
  std::vector<size_t> v;
  for (size_t b = 4096; b <= (quick ? (size_t(256) << 20) : (size_t(1) << 30)); b *= 4) v.push_back(b);
  return v;
}

std::vector<int> thread_counts() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<int> v{1};
  if (cores / 2 > 1) v.push_back(cores / 2);
  if (cores > 1) v.push_back(cores);
  return v;
}

// Runs body(t) on `threads` threads released together; returns the wall seconds from release to
// the last thread's end.
template <class Body>
double parallel_seconds(int threads, const Body& body) {
  std::atomic<bool> go{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      body(t);
    });
  while (ready.load() < threads) {
  }
  const double t0 = now_s();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return now_s() - t0;
}

constexpr int kSrcSide = 256, kDstSide = 224, kChannels = 3;
constexpr size_t kImageBytes = size_t(kDstSide) * kDstSide * kChannels;  // the uint8 crop fed to the model

void transform_image(const uint8_t* src, float* dst, unsigned seed) {
  static constexpr float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  unsigned h = seed * 2654435761u;
  const int oy = static_cast<int>(h % (kSrcSide - kDstSide + 1));
  const int ox = static_cast<int>((h >> 8) % (kSrcSide - kDstSide + 1));
  const bool flip = (h >> 16) & 1;
  for (int y = 0; y < kDstSide; ++y) {
    const uint8_t* row = src + (size_t(oy + y) * kSrcSide + ox) * kChannels;
    for (int x = 0; x < kDstSide; ++x) {
      const int sx = flip ? kDstSide - 1 - x : x;
      for (int c = 0; c < kChannels; ++c)
        dst[(size_t(c) * kDstSide + y) * kDstSide + x] =
            (row[sx * kChannels + c] * (1.0f / 255.0f) - kMean[c]) / kStd[c];
    }
  }
}

}  // namespace

void run_pcie(const Context& ctx, Output& out, bool h2d, bool d2h) {
  const std::vector<size_t> sizes = pcie_sizes(ctx.options.quick);
  const size_t max_bytes = sizes.back();
  void *pinned, *device;
  PROBE_CUDA(cudaHostAlloc(&pinned, max_bytes, cudaHostAllocPortable));
  PROBE_CUDA(cudaMalloc(&device, max_bytes));
  std::unique_ptr<char[]> pageable(new char[max_bytes]);
  std::memset(pageable.get(), 1, max_bytes);
  std::memset(pinned, 1, max_bytes);
  const size_t flush_bytes = size_t(64) << 20;
  std::unique_ptr<char[]> flush(new char[flush_bytes]);
  const int reps = ctx.options.quick ? 5 : 7;

  for (const bool to_device : {true, false}) {
    if ((to_device && !h2d) || (!to_device && !d2h)) continue;
    const char* section = to_device ? "h2d" : "d2h";
    const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    for (size_t bytes : sizes) {
      void* dst = to_device ? device : pinned;
      void* src = to_device ? pinned : device;
      const Stats s = time_on_stream(
          ctx.stream, [&] { PROBE_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, ctx.stream)); }, 3, reps);
      out.add(section,
              Record().add("memory", std::string("pinned")).add("bytes", static_cast<long long>(bytes)).stats(s));

      std::vector<double> samples;
      void* pdst = to_device ? device : static_cast<void*>(pageable.get());
      const void* psrc = to_device ? static_cast<const void*>(pageable.get()) : device;
      for (int r = 0; r <= reps; ++r) {
        std::memset(flush.get(), r, flush_bytes);
        const double t0 = now_s();
        PROBE_CUDA(cudaMemcpy(pdst, psrc, bytes, kind));
        if (r > 0) samples.push_back(now_s() - t0);  // r == 0: warm-up
      }
      out.add(section, Record()
                           .add("memory", std::string("pageable"))
                           .add("bytes", static_cast<long long>(bytes))
                           .stats(summarize(samples)));
    }
    std::fprintf(stderr, "  %s done\n", section);
  }
  PROBE_CUDA(cudaFreeHost(pinned));
  PROBE_CUDA(cudaFree(device));
}

void run_host_memcpy(const Context& ctx, Output& out) {
  const size_t max_bytes = ctx.options.quick ? (size_t(512) << 20) : (size_t(1) << 30);
  std::unique_ptr<char[]> src(new char[max_bytes]), dst(new char[max_bytes]);
  std::memset(src.get(), 3, max_bytes);
  std::memset(dst.get(), 0, max_bytes);
  const int reps = ctx.options.quick ? 3 : 5;
  for (int threads : thread_counts()) {
    for (size_t bytes = size_t(64) << 20; bytes <= max_bytes; bytes *= 2) {
      std::vector<double> samples;
      for (int r = 0; r <= reps; ++r) {
        const double s = parallel_seconds(threads, [&](int t) {
          const size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
          std::memcpy(dst.get() + begin, src.get() + begin, end - begin);
        });
        if (r > 0) samples.push_back(s);
      }
      out.add("host_memcpy", Record()
                                 .add("threads", static_cast<long long>(threads))
                                 .add("bytes", static_cast<long long>(bytes))
                                 .stats(summarize(samples)));
    }
  }
  std::fprintf(stderr, "  host_memcpy done\n");
}

void run_loader(const Context& ctx, Output& out) {
  constexpr int kPool = 64;  // distinct decoded images, reused round-robin
  const size_t src_bytes = size_t(kSrcSide) * kSrcSide * kChannels;
  std::vector<uint8_t> images(src_bytes * kPool);
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  const int reps = ctx.options.quick ? 3 : 5;
  for (int threads : thread_counts()) {
    std::vector<std::vector<float>> outputs(threads, std::vector<float>(kImageBytes));
    for (int per_thread : {16, 32, 64, 128}) {
      const int total = per_thread * threads;
      std::vector<double> samples;
      for (int r = 0; r <= reps; ++r) {
        const double s = parallel_seconds(threads, [&](int t) {
          for (int i = t; i < total; i += threads)
            transform_image(images.data() + src_bytes * (i % kPool), outputs[t].data(), static_cast<unsigned>(i + r));
        });
        if (r > 0) samples.push_back(s);
      }
      out.add("loader", Record()
                            .add("threads", static_cast<long long>(threads))
                            .add("images", static_cast<long long>(total))
                            .add("image_bytes", static_cast<long long>(kImageBytes))
                            .stats(summarize(samples)));
    }
  }
  std::fprintf(stderr, "  loader done\n");
}

}  // namespace stacksim::probe
