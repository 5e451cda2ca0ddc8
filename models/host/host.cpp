#include "models/host/host.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "config/schema.hpp"
#include "sim/engine.hpp"

namespace stacksim::analysis {

HostConfig parse_host(const config::Node& n) {
  HostConfig h;
  if (n.is_null()) return h;
  n.require_map();
  n.check_keys(config::scenario_keys("host"));
  if (n.has("kernel_launch")) {
    h.kernel_launch_s = n.non_negative("kernel_launch", n.required_quantity("kernel_launch", sim::Dimension::Time));
    if (h.kernel_launch_s > 0.1)
      n.fail("kernel_launch", "is more than 100 ms per kernel launch", "use the host time of one launch, e.g. 5 us");
  }
  if (n.has("step_overhead")) {
    h.step_overhead_s = n.non_negative("step_overhead", n.required_quantity("step_overhead", sim::Dimension::Time));
    if (h.step_overhead_s > 60)
      n.fail("step_overhead", "is more than a minute of host work per step",
             "use the host time of one step besides its kernel launches, e.g. 2.3 ms");
  }
  // The data pipeline is simulated when any of its keys is given (the launch costs are not ones).
  h.enabled = n.size() > static_cast<size_t>(n.has("kernel_launch")) + static_cast<size_t>(n.has("step_overhead"));
  if (!h.enabled) return h;
  h.cpu_seconds_per_sample = n.non_negative(
      "cpu_seconds_per_sample", n.optional_quantity("cpu_seconds_per_sample", sim::Dimension::Time, 1.0).value_or(0));
  if (h.cpu_seconds_per_sample > 3600)
    n.fail("cpu_seconds_per_sample", "is more than an hour of CPU per sample",
           "use the seconds one core spends per sample, e.g. 0.02 s");
  const long long w = n.optional_int("loader_workers").value_or(8);
  if (w < 1) n.fail("loader_workers", "must be at least 1, got " + std::to_string(w), "use e.g. 8 workers per GPU");
  if (w > 1024)
    n.fail("loader_workers", "is more than 1024 workers per GPU", "use the worker processes of one rank, e.g. 8");
  h.loader_workers = static_cast<int>(w);
  const long long pf = n.optional_int("prefetch").value_or(2);
  if (pf < 0) n.fail("prefetch", "must not be negative", "use 0 (synchronous) or more batches");
  if (pf > 1024) n.fail("prefetch", "is more than 1024 batches", "use the batches prefetched, e.g. 2");
  h.prefetch = static_cast<int>(pf);
  h.storage_bytes_per_sample =
      n.non_negative("storage_bytes_per_sample",
                     n.optional_quantity("storage_bytes_per_sample", sim::Dimension::Bytes, 1.0).value_or(0));
  if (n.has("storage_read_bandwidth")) {
    h.storage_read_Bps =
        n.positive("storage_read_bandwidth", n.required_quantity("storage_read_bandwidth", sim::Dimension::Bandwidth));
    if (h.storage_read_Bps < 1e6)  // slower reads outrun the engine's horizon
      n.fail("storage_read_bandwidth", "is below 1 MB/s", "use the storage's read bandwidth per node, e.g. 5 GB/s");
  }
  h.sample_bytes =
      n.non_negative("sample_bytes", n.optional_quantity("sample_bytes", sim::Dimension::Bytes, 1.0).value_or(0));
  // A terabyte per sample is past any dataset's sample; beyond it the step outruns the engine's horizon.
  constexpr double kMaxSampleBytes = 1e12;
  if (h.storage_bytes_per_sample > kMaxSampleBytes)
    n.fail("storage_bytes_per_sample", "is more than a terabyte per sample",
           "use the bytes one sample reads, e.g. 1 MB");
  if (h.sample_bytes > kMaxSampleBytes)
    n.fail("sample_bytes", "is more than a terabyte per sample",
           "use the bytes one sample copies to the GPU, e.g. 64 KB");
  h.pinned = n.bool_or("pinned", true);
  if (n.has("workers_build")) {
    const std::string unit = n.required_string("workers_build");
    if (unit != "batches" && unit != "samples")
      n.fail("workers_build", "is '" + unit + "'",
             "use batches (PyTorch's DataLoader: each worker builds whole batches) or samples (a parallel map "
             "such as tf.data or DALI: the workers share each batch's samples)");
    h.workers_build_batches = unit == "batches";
  }
  h.sample_cost_cv = n.non_negative("sample_cost_cv", n.optional_number("sample_cost_cv").value_or(0));
  if (h.sample_cost_cv > 10)
    n.fail("sample_cost_cv", "is more than 10 (a sample's cost varying by ten times its mean)",
           "use the standard deviation over the mean of a sample's loading cost, e.g. 0.5");
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
  return t;
}

namespace {

constexpr int kMaxItemsPerBatch = 64;  // bigger batches load in chunks of samples (keeps it fast)
// Simulated steps: the period is the mean over the measured ones after a warm-up. Deterministic
// costs settle within a few steps; varying ones need many to average the stalls.
constexpr int kWarmSteps = 5, kMeasuredSteps = 5;
constexpr int kWarmStepsVarying = 20, kMeasuredStepsVarying = 400;
constexpr int kMaxMeasuredSteps = 20000;  // whole-batch workers with deep prefetch (keeps it fast)
constexpr int kMaxNodesVarying = 32;      // nodes whose loaders a varying-cost step waits for

enum class Kind : uint64_t { Load, Step };
uint64_t make_tag(Kind k, int gpu, int index) {
  return (static_cast<uint64_t>(k) << 56) | (static_cast<uint64_t>(gpu) << 32) | static_cast<uint32_t>(index);
}

// A sample cost multiplier of mean 1 and coefficient of variation cv, the same for the same
// (gpu, item) on every run, whatever the thread count: lognormal, from two uniforms of a
// counter-based hash (SplitMix64) through Box-Muller.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double cost_multiplier(double cv, int gpu, int item) {
  if (cv <= 0) return 1.0;
  const uint64_t key = (static_cast<uint64_t>(gpu) << 32) | static_cast<uint32_t>(item);
  const double u1 = (static_cast<double>(splitmix64(2 * key) >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  const double u2 = static_cast<double>(splitmix64(2 * key + 1) >> 11) * 0x1.0p-53;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  const double sigma = std::sqrt(std::log1p(cv * cv));
  return std::exp(sigma * z - 0.5 * sigma * sigma);
}

// Loader workers of every GPU of the node share its cores and storage. The GPUs step together
// (their data-parallel collectives make each step wait for every rank): step b starts once every
// GPU has batch b loaded. (The batch's host-to-device copy is part of the GPU step: the replay
// runs it on the PCIe tree beside the NICs' traffic, StepProgram::batch_copy_bytes.)
//   batches  PyTorch's DataLoader: batch i goes to worker i mod W, which builds it whole on one
//            core; batches come out in order; prefetch x W batches are handed out ahead of the
//            step that takes them (prefetch_factor); prefetch 0 is num_workers=0, the training
//            process loading each batch itself after the previous step.
//   samples  a parallel map (tf.data, DALI): the workers share each batch's samples (in chunks
//            for big batches), batch b may load once step b-prefetch-1 has finished.
class Pipeline {
 public:
  Pipeline(const HostConfig& h, const topo::ClusterConfig& c, int samples, double gpu_step_s)
      : h_(h), samples_(samples), gpu_step_(sim::Time::from_seconds(gpu_step_s)), by_batch_(h.workers_build_batches) {
    const bool synchronous = h.prefetch == 0;
    // Workers beyond the GPU's share of the node's cores would share those cores: simulated as
    // that many workers (the same throughput; it bounds the flows on the CPU resource).
    const int core_share = std::max(
        1, static_cast<int>(static_cast<double>(c.node.cpu_sockets) * c.node.cores_per_socket / c.node.gpus_per_node));
    const int workers = std::min(h.loader_workers, core_share);
    if (by_batch_) {
      workers_ = synchronous ? 1 : workers;
      samples_per_item_ = samples;
      items_per_batch_ = 1;
    } else {
      workers_ = workers;
      const int chunk = (samples + kMaxItemsPerBatch - 1) / kMaxItemsPerBatch;
      samples_per_item_ = chunk;
      items_per_batch_ = (samples + chunk - 1) / chunk;
    }
    // An item of several samples varies as their sum: cv / sqrt(samples).
    item_cv_ = h.sample_cost_cv / std::sqrt(static_cast<double>(samples_per_item_));
    const bool varying = item_cv_ > 0;
    const int wanted = varying ? kMeasuredStepsVarying : kMeasuredSteps;
    const int warm = varying ? kWarmStepsVarying : kWarmSteps;
    if (by_batch_ && !synchronous) {
      // Whole batches arrive in waves of W (each worker finishes one): warm up over the first
      // two waves, measure whole waves, and leave the last waves unmeasured (with fewer batches
      // left than workers, the workers still loading share the cores among fewer).
      // Varying costs: each worker's batches are a random walk the others may run ahead of by
      // prefetch batches at most; measuring over ten such spans per worker keeps the finite
      // horizon's own spread (the slowest walk of the window) small against the stalls.
      const int per_worker = std::max((wanted + workers_ - 1) / workers_, varying ? 10 * h.prefetch : 0);
      measured_ = std::max(1, std::min(per_worker, kMaxMeasuredSteps / workers_)) * workers_;
      warm_ = warm + 2 * workers_;
      steps_ = warm_ + measured_ + 2 * workers_;
    } else {
      // W workers taking a batch's items in turn repeat their pattern every W / gcd(items, W)
      // batches: measure whole patterns.
      const int pattern = workers_ / std::gcd(items_per_batch_, workers_);
      measured_ = (wanted + pattern - 1) / pattern * pattern;
      warm_ = warm;
      steps_ = warm_ + measured_ + (varying ? warm : 0);
    }
    // Fixed costs: every node runs the same pipeline, one stands for all. Varying ones: each node
    // draws its own, and a step waits for the latest batch of every GPU simulated.
    const int nodes = varying ? std::max(1, std::min(c.nodes, kMaxNodesVarying)) : 1;
    gpus_per_node_ = c.node.gpus_per_node;
    const double storage_Bps = h.storage_read_Bps > 0 ? h.storage_read_Bps : c.node.storage_read_Bps;
    for (int n = 0; n < nodes; ++n) {
      cpu_.push_back(
          engine_.add_resource({"cpu cores", static_cast<double>(c.node.cpu_sockets) * c.node.cores_per_socket}));
      if (storage_Bps > 0) storage_.push_back(engine_.add_resource({"storage read", storage_Bps}));
    }
    gpus_.resize(static_cast<size_t>(nodes) * gpus_per_node_);
    for (Gpu& gpu : gpus_) {
      gpu.idle_workers = workers_;
      gpu.items_loaded.assign(steps_, 0);
      if (by_batch_) {
        gpu.worker_busy.assign(workers_, 0);
        for (int w = 0; w < workers_; ++w) gpu.worker_next.push_back(w);
      }
    }
    engine_.on_completion([this](sim::ActivityId, uint64_t tag) { done(tag); });
  }

  int nodes() const { return static_cast<int>(cpu_.size()); }

  // The steady-state step period; exactly the GPU step when the GPUs never wait.
  double run(double gpu_step_s) {
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) feed_workers(g);
    engine_.run();
    const sim::Time span = step_end_[warm_ + measured_ - 1] - step_end_[warm_ - 1];
    return span == gpu_step_ * measured_ ? gpu_step_s : span.seconds() / measured_;
  }

 private:
  struct Gpu {
    int idle_workers = 0;           // samples: workers without an item
    std::vector<char> worker_busy;  // batches: per worker
    std::vector<int> worker_next;   // batches: the next batch of each worker (w, w + W, ...)
    int next_item = 0;              // samples: next item to hand to a worker (all batches in order)
    std::vector<int> items_loaded;  // per batch
    int batches_loaded = 0;         // batches 0..batches_loaded-1 are in host memory
  };

  int samples_in_item(int item) const {
    const int first = (item % items_per_batch_) * samples_per_item_;
    return std::min(samples_per_item_, samples_ - first);
  }

  void start_load(int g, int item) {
    sim::ActivitySpec a;
    // A sample's CPU time and the bytes it reads vary together (a bigger image costs both).
    a.work = samples_in_item(item) * cost_multiplier(item_cv_, g, item);
    const int node = g / gpus_per_node_;
    if (h_.cpu_seconds_per_sample > 0) {
      a.usages.push_back({cpu_[node], h_.cpu_seconds_per_sample});
      a.bound = 1.0 / h_.cpu_seconds_per_sample;  // one worker runs on one core
    }
    if (!storage_.empty() && h_.storage_bytes_per_sample > 0)
      a.usages.push_back({storage_[node], h_.storage_bytes_per_sample});
    if (a.usages.empty()) a.work = 0;  // nothing to do: ready at once
    engine_.start(a, make_tag(Kind::Load, g, item));
  }

  void feed_workers(int g) {
    Gpu& gpu = gpus_[g];
    if (by_batch_) {
      // Batches handed out so far: prefetch per worker ahead of the steps taken (PyTorch's
      // _try_put_index on every batch taken); synchronous: the next one once the step is done.
      const int handed_out = h_.prefetch == 0 ? steps_done_ + 1 : steps_started_ + h_.prefetch * h_.loader_workers;
      for (int w = 0; w < workers_; ++w) {
        const int next = gpu.worker_next[w];
        if (gpu.worker_busy[w] || next >= steps_ || next >= handed_out) continue;
        gpu.worker_busy[w] = 1;
        start_load(g, next);
      }
      return;
    }
    while (gpu.idle_workers > 0 && gpu.next_item < steps_ * items_per_batch_ &&
           gpu.next_item / items_per_batch_ <= steps_done_ + h_.prefetch) {
      --gpu.idle_workers;
      start_load(g, gpu.next_item++);
    }
  }

  // The GPUs start step b together once every one of them has batch b in host memory.
  void advance_step() {
    if (step_busy_ || steps_done_ >= steps_) return;
    for (const Gpu& gpu : gpus_)
      if (gpu.batches_loaded <= steps_done_) return;
    step_busy_ = true;
    ++steps_started_;
    sim::ActivitySpec a;
    a.latency = gpu_step_;
    engine_.start(a, make_tag(Kind::Step, 0, steps_done_));
    if (by_batch_) feed_all();  // taking a batch hands out the next ones
  }

  void feed_all() {
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) feed_workers(g);
  }

  void done(uint64_t tag) {
    const auto kind = static_cast<Kind>(tag >> 56);
    const int g = static_cast<int>((tag >> 32) & 0xffffff);
    const int index = static_cast<int>(tag & 0xffffffff);
    switch (kind) {
      case Kind::Load: {
        Gpu& gpu = gpus_[g];
        ++gpu.items_loaded[index / items_per_batch_];
        if (by_batch_) {
          gpu.worker_busy[index % workers_] = 0;
          gpu.worker_next[index % workers_] += workers_;
        } else {
          ++gpu.idle_workers;
        }
        while (gpu.batches_loaded < steps_ && gpu.items_loaded[gpu.batches_loaded] == items_per_batch_)
          ++gpu.batches_loaded;
        feed_workers(g);
        break;
      }
      case Kind::Step:
        step_busy_ = false;
        ++steps_done_;
        step_end_.push_back(engine_.now());
        feed_all();  // the window moved
        break;
    }
    advance_step();
  }

  const HostConfig& h_;
  const int samples_;
  const sim::Time gpu_step_;
  const bool by_batch_;
  int workers_ = 1;
  int samples_per_item_ = 1;
  int items_per_batch_ = 1;
  double item_cv_ = 0;
  int warm_ = 0, measured_ = 0, steps_ = 0;  // steps: warm-up, measured, then a tail
  sim::Engine engine_;
  int gpus_per_node_ = 1;
  std::vector<sim::ResourceId> cpu_;      // per simulated node
  std::vector<sim::ResourceId> storage_;  // per simulated node, when it has a read bandwidth
  std::vector<Gpu> gpus_;                 // node-major
  bool step_busy_ = false;
  int steps_started_ = 0, steps_done_ = 0;
  std::vector<sim::Time> step_end_;
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
  r.nodes_simulated = p.nodes();
  return r;
}

}  // namespace stacksim::analysis
