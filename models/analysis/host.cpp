#include "models/analysis/host.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/engine.hpp"

namespace stacksim::analysis {

HostConfig parse_host(const config::Node& n) {
  HostConfig h;
  if (n.is_null()) return h;
  n.require_map();
  n.check_keys({"cpu_seconds_per_sample", "loader_workers", "prefetch", "storage_bytes_per_sample",
                "storage_read_bandwidth", "sample_bytes", "pinned", "kernel_launch"});
  if (n.has("kernel_launch")) {
    h.kernel_launch_s = n.non_negative("kernel_launch", n.required_quantity("kernel_launch", sim::Dimension::Time));
    if (h.kernel_launch_s > 0.1)
      n.fail("kernel_launch", "is more than 100 ms per kernel launch", "use the host time of one launch, e.g. 5 us");
  }
  // The data pipeline is simulated when any of its keys is given (kernel_launch alone is not one).
  h.enabled = n.size() > (n.has("kernel_launch") ? 1u : 0u);
  if (!h.enabled) return h;
  h.cpu_seconds_per_sample = n.non_negative(
      "cpu_seconds_per_sample", n.optional_quantity("cpu_seconds_per_sample", sim::Dimension::Time, 1.0).value_or(0));
  if (h.cpu_seconds_per_sample > 3600)
    n.fail("cpu_seconds_per_sample", "is more than an hour of CPU per sample", "use the seconds one core spends per sample, e.g. 0.02 s");
  const long long w = n.optional_int("loader_workers").value_or(8);
  if (w < 1) n.fail("loader_workers", "must be at least 1, got " + std::to_string(w), "use e.g. 8 workers per GPU");
  h.loader_workers = static_cast<int>(std::min<long long>(w, 4096));
  const long long pf = n.optional_int("prefetch").value_or(2);
  if (pf < 0) n.fail("prefetch", "must not be negative", "use 0 (synchronous) or more batches");
  h.prefetch = static_cast<int>(std::min<long long>(pf, 1024));
  h.storage_bytes_per_sample = n.non_negative(
      "storage_bytes_per_sample", n.optional_quantity("storage_bytes_per_sample", sim::Dimension::Bytes, 1.0).value_or(0));
  if (n.has("storage_read_bandwidth"))
    h.storage_read_Bps = n.positive("storage_read_bandwidth",
                                    n.required_quantity("storage_read_bandwidth", sim::Dimension::Bandwidth));
  h.sample_bytes = n.non_negative("sample_bytes", n.optional_quantity("sample_bytes", sim::Dimension::Bytes, 1.0).value_or(0));
  // A terabyte per sample is past any dataset's sample; beyond it the step outruns the engine's horizon.
  constexpr double kMaxSampleBytes = 1e12;
  if (h.storage_bytes_per_sample > kMaxSampleBytes)
    n.fail("storage_bytes_per_sample", "is more than a terabyte per sample", "use the bytes one sample reads, e.g. 1 MB");
  if (h.sample_bytes > kMaxSampleBytes)
    n.fail("sample_bytes", "is more than a terabyte per sample", "use the bytes one sample copies to the GPU, e.g. 64 KB");
  h.pinned = n.bool_or("pinned", true);
  return h;
}

HostTimes host_times(const HostConfig& h, const topo::ClusterConfig& c, double samples_per_gpu) {
  HostTimes t;
  if (!h.enabled) return t;
  const int gpus = c.node.gpus_per_node;
  const double cores_per_gpu = static_cast<double>(c.node.cpu_sockets) * c.node.cores_per_socket / gpus;
  const double workers = std::min<double>(h.loader_workers, cores_per_gpu);
  t.loader_s = samples_per_gpu * h.cpu_seconds_per_sample / workers;
  const double storage_Bps = h.storage_read_Bps > 0 ? h.storage_read_Bps : c.node.storage_read_Bps;
  if (h.storage_bytes_per_sample > 0)
    t.storage_s = storage_Bps > 0 ? samples_per_gpu * gpus * h.storage_bytes_per_sample / storage_Bps : 0;
  t.h2d_s = h.sample_bytes > 0 ? samples_per_gpu * h.sample_bytes / (c.node.pcie_bandwidth_Bps * (h.pinned ? kPinnedCopyEfficiency : kPageableCopyEfficiency)) : 0;
  if (!h.pinned) t.blocking_s = t.h2d_s;
  return t;
}

namespace {

constexpr int kMaxItemsPerBatch = 64;  // bigger batches load in chunks of samples (keeps it fast)
constexpr int kSteps = 10;             // simulated steps; the last kMeasured give the period
constexpr int kMeasured = 5;

enum class Kind : uint64_t { Load, Step };
uint64_t make_tag(Kind k, int gpu, int index) {
  return (static_cast<uint64_t>(k) << 56) | (static_cast<uint64_t>(gpu) << 32) | static_cast<uint32_t>(index);
}

// Loader workers of every GPU of the node share its cores and storage; a GPU starts step b once
// batch b is loaded. (The batch's host-to-device copy is part of the GPU step: the replay runs it
// on the PCIe tree beside the NICs' traffic, StepProgram::batch_copy_bytes.)
class Pipeline {
 public:
  Pipeline(const HostConfig& h, const topo::ClusterConfig& c, int samples, double gpu_step_s)
      : h_(h), samples_(samples), gpu_step_(sim::Time::from_seconds(gpu_step_s)) {
    const int chunk = (samples + kMaxItemsPerBatch - 1) / kMaxItemsPerBatch;
    samples_per_item_ = chunk;
    items_per_batch_ = (samples + chunk - 1) / chunk;
    cpu_ = engine_.add_resource({"cpu cores", static_cast<double>(c.node.cpu_sockets) * c.node.cores_per_socket});
    const double storage_Bps = h.storage_read_Bps > 0 ? h.storage_read_Bps : c.node.storage_read_Bps;
    if (storage_Bps > 0) storage_ = engine_.add_resource({"storage read", storage_Bps});
    gpus_.resize(c.node.gpus_per_node);
    for (Gpu& gpu : gpus_) {
      gpu.idle_workers = h_.loader_workers;
      gpu.items_loaded.assign(kSteps, 0);
    }
    engine_.on_completion([this](sim::ActivityId, uint64_t tag) { done(tag); });
  }

  // The steady-state step period; exactly the GPU step when the GPU never waits.
  double run(double gpu_step_s) {
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) feed_workers(g);
    engine_.run();
    // Every GPU of the node runs the same pipeline; GPU 0's last steps give the period.
    const auto& end = gpus_[0].step_end;
    const sim::Time span = end[kSteps - 1] - end[kSteps - 1 - kMeasured];
    return span == gpu_step_ * kMeasured ? gpu_step_s : span.seconds() / kMeasured;
  }

 private:
  struct Gpu {
    int idle_workers = 0;
    int next_item = 0;               // next item to hand to a worker (items of all batches in order)
    std::vector<int> items_loaded;   // per batch
    int batches_loaded = 0;          // batches 0..batches_loaded-1 are in host memory
    bool gpu_busy = false;
    int steps_done = 0;
    std::vector<sim::Time> step_end;
  };

  int samples_in_item(int item) const {
    const int first = (item % items_per_batch_) * samples_per_item_;
    return std::min(samples_per_item_, samples_ - first);
  }

  // Workers take items in order while their batch is within the prefetch window.
  void feed_workers(int g) {
    Gpu& gpu = gpus_[g];
    while (gpu.idle_workers > 0 && gpu.next_item < kSteps * items_per_batch_ &&
           gpu.next_item / items_per_batch_ <= gpu.steps_done + h_.prefetch) {
      const int item = gpu.next_item++;
      --gpu.idle_workers;
      sim::ActivitySpec a;
      a.work = samples_in_item(item);
      if (h_.cpu_seconds_per_sample > 0) {
        a.usages.push_back({cpu_, h_.cpu_seconds_per_sample});
        a.bound = 1.0 / h_.cpu_seconds_per_sample;  // one worker runs on one core
      }
      if (storage_ && h_.storage_bytes_per_sample > 0) a.usages.push_back({*storage_, h_.storage_bytes_per_sample});
      if (a.usages.empty()) a.work = 0;  // nothing to do: ready at once
      engine_.start(a, make_tag(Kind::Load, g, item));
    }
  }

  // The GPU starts step b once batch b is in host memory.
  void advance_gpu(int g) {
    Gpu& gpu = gpus_[g];
    const int b = gpu.steps_done;
    if (gpu.gpu_busy || b >= kSteps || gpu.batches_loaded <= b) return;
    gpu.gpu_busy = true;
    sim::ActivitySpec a;
    a.latency = gpu_step_;
    engine_.start(a, make_tag(Kind::Step, g, b));
  }

  void done(uint64_t tag) {
    const auto kind = static_cast<Kind>(tag >> 56);
    const int g = static_cast<int>((tag >> 32) & 0xffffff);
    const int index = static_cast<int>(tag & 0xffffffff);
    Gpu& gpu = gpus_[g];
    switch (kind) {
      case Kind::Load:
        ++gpu.idle_workers;
        ++gpu.items_loaded[index / items_per_batch_];
        while (gpu.batches_loaded < kSteps && gpu.items_loaded[gpu.batches_loaded] == items_per_batch_)
          ++gpu.batches_loaded;
        break;
      case Kind::Step:
        gpu.gpu_busy = false;
        ++gpu.steps_done;
        gpu.step_end.push_back(engine_.now());
        break;
    }
    feed_workers(g);
    advance_gpu(g);
  }

  const HostConfig& h_;
  const int samples_;
  const sim::Time gpu_step_;
  int samples_per_item_ = 1;
  int items_per_batch_ = 1;
  sim::Engine engine_;
  sim::ResourceId cpu_ = 0;
  std::optional<sim::ResourceId> storage_;
  std::vector<Gpu> gpus_;
};

}  // namespace

HostPipelineResult simulate_host_pipeline(const HostConfig& h, const topo::ClusterConfig& c, double samples_per_gpu,
                                          double gpu_step_s) {
  HostPipelineResult r{gpu_step_s, 0};
  if (!h.enabled) return r;
  const int samples = std::max(1, static_cast<int>(std::llround(samples_per_gpu)));
  Pipeline p(h, c, samples, gpu_step_s);
  r.step_s = p.run(gpu_step_s);
  r.data_wait_s = std::max(0.0, r.step_s - gpu_step_s);
  return r;
}

}  // namespace stacksim::analysis
