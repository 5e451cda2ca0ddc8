// The request-level loop: instances step independently (each step's end is an event), requests
// arrive by the workload's mode and go to the instance with the fewest outstanding requests
// (ties: the lowest index), and a disaggregated deployment hands each prefilled request's KV to a
// decode instance over the cluster's links (transfers into one decode instance queue behind each
// other). Events at one time run in a fixed order (step ends, transfers, arrivals), then idle
// instances with work start a step: the same input gives the same output, bit for bit.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <queue>

#include "config/error.hpp"
#include "models/serving/instance.hpp"
#include "models/serving/metrics.hpp"
#include "models/serving/serving.hpp"
#include "models/serving/step_cost.hpp"
#include "models/serving/summary.hpp"

namespace stacksim::serving {
namespace {

enum EventKind : int { kStepEnd = 0, kTransferDone = 1, kArrival = 2 };
struct Event {
  double t;
  int kind;
  uint64_t order;
  long long payload;
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return order > o.order;
  }
};

struct Pool {
  ServingConfig config;
  MemoryPlan plan;
  std::unique_ptr<StepCostModel> cost;
  std::vector<std::unique_ptr<Instance>> instances;
  int first_instance = 0;
};

Seq seq_from(const Request& r, double arrival_s) {
  Seq s;
  s.id = r.id;
  s.arrival_s = arrival_s;
  s.input_tokens = r.input_tokens;
  s.output_tokens = r.output_tokens;
  s.prompt_tokens = r.input_tokens;
  return s;
}

class Simulation {
 public:
  Simulation(const ServingConfig& config, const Workload& w, const workload::ModelConfig& model,
             const ServingHardware& hw, const Slo& slo, const SimOptions& opt)
      : config_(config), w_(w), slo_(slo), opt_(opt), summary_(slo, opt) {
    check_workload(w);
    total_ = w.mode == ArrivalMode::Trace ? static_cast<long long>(w.trace.size()) : w.num_requests;
    cluster_ = std::make_shared<topo::Cluster>(topo::build_cluster(hw.cluster));
    const coll::CommTuning tuning = coll::tuning_for(hw.cluster.node, hw.cluster.nic);
    const auto& dis = config.disaggregated;
    if (!dis.enabled) {
      build_pool(agg_, config, config.parallel, config.replicas, 0, model, hw, tuning, InstanceRole::Aggregated);
      gpus_ = config.replicas * config.parallel.gpus();
    } else {
      if (dis.prefill.replicas < 1 || dis.decode.replicas < 1)
        throw config::InputError(config.origin, 0, "serving.disaggregated", "each pool needs >= 1 instance",
                                 "set prefill.replicas and decode.replicas");
      build_pool(agg_, config, dis.prefill.parallel, dis.prefill.replicas, 0, model, hw, tuning, InstanceRole::Prefill);
      build_pool(decode_, config, dis.decode.parallel, dis.decode.replicas, dis.prefill.parallel.gpus(), model, hw,
                 tuning, InstanceRole::Decode);
      gpus_ = dis.prefill.replicas * dis.prefill.parallel.gpus() + dis.decode.replicas * dis.decode.parallel.gpus();
      ingress_free_s_.assign(decode_.instances.size(), 0.0);
      const Parallelism& pp = dis.prefill.parallel;
      const int shards = model.is_mla() ? pp.pp : pp.tp * pp.pp;  // MLA's latent is whole on every TP rank
      kv_bytes_per_token_ = agg_.plan.kv_bytes_per_token * shards;
      transfer_shards_ = shards;
    }
  }

  ServingResult run() {
    start_arrivals();
    const bool progress = isatty(STDERR_FILENO) && total_ >= 200000;
    long long next_report = total_ / 20;
    while (summary_.completed() < total_) {
      kick_idle();
      if (events_.empty()) stall();
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      if (e.kind == kStepEnd)
        step_end(static_cast<size_t>(e.payload));
      else if (e.kind == kTransferDone)
        transfer_done(static_cast<size_t>(e.payload));
      else
        arrival(e.payload);
      // Start idle instances only once every event of this time is in.
      while (!events_.empty() && events_.top().t == now_) {
        const Event f = events_.top();
        events_.pop();
        if (f.kind == kStepEnd)
          step_end(static_cast<size_t>(f.payload));
        else if (f.kind == kTransferDone)
          transfer_done(static_cast<size_t>(f.payload));
        else
          arrival(f.payload);
      }
      if (progress && summary_.completed() >= next_report) {
        std::fprintf(stderr, "\rserving: %lld / %lld requests", summary_.completed(), total_);
        next_report += total_ / 20;
      }
    }
    if (progress) std::fprintf(stderr, "\n");
    ServingResult r = summary_.finish();
    r.gpus = gpus_;
    r.memory = config_.disaggregated.enabled ? decode_.plan : agg_.plan;
    if (config_.disaggregated.enabled)
      r.notes.push_back("disaggregated: prefill pool KV per GPU " + std::to_string(agg_.plan.kv_capacity_tokens) +
                        " tokens per instance; memory shows the decode pool");
    return r;
  }

 private:
  void build_pool(Pool& p, const ServingConfig& base, const Parallelism& par, int replicas, int first_rank,
                  const workload::ModelConfig& model, const ServingHardware& hw, const coll::CommTuning& tuning,
                  InstanceRole role) {
    if (replicas < 1)
      throw config::InputError(base.origin, 0, "serving.replicas", "needs >= 1 instance", "set replicas >= 1");
    if (par.tp < 1 || par.pp < 1 || par.dp < 1 || par.ep < 1)
      throw config::InputError(base.origin, 0, "serving.tp", "tp, pp, dp and ep must be >= 1",
                               "fix the parallel sizes");
    if (par.ep > 1 && (par.tp * par.dp) % par.ep != 0)
      throw config::InputError(
          base.origin, 0, "serving.ep",
          "ep " + std::to_string(par.ep) + " must divide tp x dp = " + std::to_string(par.tp * par.dp),
          "choose ep among the divisors of tp x dp");
    if (par.ep > 1 && !model.is_moe())
      throw config::InputError(base.origin, 0, "serving.ep", "ep > 1 but the model has no experts", "set ep: 1");
    const int need = first_rank + par.gpus();
    if (need > cluster_->num_gpus())
      throw config::InputError(
          base.origin, 0, "cluster.nodes",
          "one instance needs " + std::to_string(par.gpus()) + " GPUs" +
              (first_rank > 0 ? " after the prefill instance's " + std::to_string(first_rank) : "") +
              ", the cluster has " + std::to_string(cluster_->num_gpus()),
          "add nodes or lower tp x pp x dp");
    p.config = base;
    p.config.parallel = par;
    p.plan = plan_memory(p.config, model, hw.gpu);
    p.cost = std::make_unique<StepCostModel>(p.config, par, model, hw.gpu, cluster_, tuning, first_rank);
    // pp stages run pp batches in flight (vLLM's virtual engines): pp schedulers per instance, each
    // with a pp-th of the KV blocks, each step passing through every stage.
    const long long blocks = p.plan.kv_blocks / par.pp;
    if (blocks < 1)
      throw config::InputError(base.origin, 0, "serving.pp", "the KV cache has fewer blocks than pipeline stages",
                               "lower pp or free memory for the KV cache");
    for (int r = 0; r < replicas * par.pp; ++r)
      p.instances.push_back(std::make_unique<Instance>(p.config, p.cost.get(), blocks, base.max_num_seqs * par.dp,
                                                       base.max_num_batched_tokens * par.dp, role,
                                                       static_cast<int>(p.instances.size())));
  }

  void push(double t, EventKind kind, long long payload) { events_.push({t, kind, order_++, payload}); }

  void start_arrivals() {
    switch (w_.mode) {
      case ArrivalMode::Offline: {
        for (auto& inst : agg_.instances)
          inst->pull = [this](Seq& s) {
            if (next_index_ >= total_) return false;
            const Request r = draw_request(w_, next_index_++);
            check_fits(r);
            s = seq_from(r, 0.0);
            return true;
          };
        break;
      }
      case ArrivalMode::Concurrency:
        for (int i = 0; i < w_.concurrency && next_index_ < total_; ++i) dispatch_new(0.0);
        break;
      case ArrivalMode::FixedBatch:
        next_batch(0.0);
        break;
      case ArrivalMode::Poisson:
      case ArrivalMode::Gamma:
        next_arrival_s_ = draw_gap_s(w_, 0);
        push(next_arrival_s_, kArrival, 0);
        break;
      case ArrivalMode::Trace:
        push(w_.trace[0].arrival_s, kArrival, 0);
        break;
    }
  }

  void next_batch(double t) {
    batch_left_ = 0;
    for (int i = 0; i < w_.batch_size && next_index_ < total_; ++i, ++batch_left_) dispatch_new(t);
  }

  void check_fits(const Request& r) {
    const Instance& first = *(config_.disaggregated.enabled ? decode_ : agg_).instances.front();
    const long long tokens = r.input_tokens + r.output_tokens;
    if (first.blocks_for(tokens) > first.total_blocks())
      throw config::InputError(
          w_.origin.empty() ? config_.origin : w_.origin, 0, "serving.workload.input_len",
          "request " + std::to_string(r.id) + " needs " + std::to_string(tokens) +
              " tokens of KV cache, one instance holds " +
              std::to_string(first.total_blocks() * config_.block_size_tokens),
          "shorten the requests, or give the KV cache more memory (tp, gpu_memory_utilization, kv dtype)");
  }

  void dispatch_new(double t) {
    const Request r = draw_request(w_, next_index_++);
    check_fits(r);
    to_least_loaded(agg_, seq_from(r, t));
  }

  static size_t least_loaded(const Pool& p) {
    size_t best = 0;
    for (size_t i = 1; i < p.instances.size(); ++i)
      if (p.instances[i]->outstanding() + p.instances[i]->inbound <
          p.instances[best]->outstanding() + p.instances[best]->inbound)
        best = i;
    return best;
  }
  void to_least_loaded(Pool& p, Seq s) { p.instances[least_loaded(p)]->enqueue(std::move(s)); }

  void arrival(long long index) {
    const Request r = draw_request(w_, index);
    check_fits(r);
    next_index_ = index + 1;
    to_least_loaded(agg_, seq_from(r, now_));
    if (next_index_ < total_) {
      if (w_.mode == ArrivalMode::Trace) {
        push(w_.trace[static_cast<size_t>(next_index_)].arrival_s, kArrival, next_index_);
      } else {
        next_arrival_s_ += draw_gap_s(w_, next_index_);
        push(next_arrival_s_, kArrival, next_index_);
      }
    }
  }

  Instance& instance(size_t global) {
    return global < agg_.instances.size() ? *agg_.instances[global]
                                          : *decode_.instances[global - agg_.instances.size()];
  }
  size_t instance_count() const { return agg_.instances.size() + decode_.instances.size(); }

  void kick_idle() {
    for (size_t g = 0; g < instance_count(); ++g) {
      Instance& inst = instance(g);
      if (inst.busy || !inst.has_work()) continue;
      const StepOutcome o = inst.step(now_, inst.pending_done);
      if (o.seconds <= 0) continue;  // nothing admissible: waits for blocks freed elsewhere
      inst.busy = true;
      inst.busy_until = now_ + o.seconds;
      summary_.add_step(o, static_cast<int>(g), g < agg_.instances.size() && config_.disaggregated.enabled, now_);
      push(inst.busy_until, kStepEnd, static_cast<long long>(g));
    }
  }

  void step_end(size_t g) {
    Instance& inst = instance(g);
    inst.busy = false;
    std::vector<Seq> done;
    done.swap(inst.pending_done);
    const bool prefill_side = config_.disaggregated.enabled && g < agg_.instances.size();
    for (Seq& s : done) {
      if (prefill_side && s.generated < s.output_tokens)
        start_transfer(std::move(s));
      else
        finish(s);
    }
  }

  void start_transfer(Seq s) {
    const size_t d = least_loaded(decode_);
    const double bytes = static_cast<double>(s.kv_tokens) * kv_bytes_per_token_;
    const int dst = config_.disaggregated.prefill.parallel.gpus();
    // Every prefill GPU sends its shard at once; transfers into one decode instance queue up.
    const double seconds = agg_.cost->transfer_seconds(dst, bytes / transfer_shards_);
    const double start = std::max(now_, ingress_free_s_[d]);
    ingress_free_s_[d] = start + seconds;
    summary_.add_transfer(seconds);
    s.prompt_tokens = s.kv_tokens;  // arrives with its prompt computed and its KV in place
    s.computed = s.kv_tokens;
    s.blocks = 0;
    s.prefix_applied = true;
    ++decode_.instances[d]->inbound;
    size_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      transfers_[slot] = {d, std::move(s)};
    } else {
      slot = transfers_.size();
      transfers_.emplace_back(d, std::move(s));
    }
    push(start + seconds, kTransferDone, static_cast<long long>(slot));
  }

  void transfer_done(size_t slot) {
    auto& [d, s] = transfers_[slot];
    --decode_.instances[d]->inbound;
    decode_.instances[d]->enqueue(std::move(s));
    free_slots_.push_back(slot);
  }

  void finish(const Seq& s) {
    summary_.add_request(s);
    if (w_.mode == ArrivalMode::Concurrency && next_index_ < total_) dispatch_new(now_);
    if (w_.mode == ArrivalMode::FixedBatch && --batch_left_ == 0 && next_index_ < total_) next_batch(now_);
  }

  [[noreturn]] void stall() {
    throw config::InputError(config_.origin, 0, "serving.gpu_memory_utilization",
                             "the simulation stalled: a waiting request can never get the KV blocks it needs",
                             "give the KV cache more memory or shorten the requests");
  }

  const ServingConfig& config_;
  const Workload& w_;
  const Slo& slo_;
  const SimOptions& opt_;
  Summary summary_;
  std::shared_ptr<topo::Cluster> cluster_;
  Pool agg_, decode_;  // agg_ is the prefill pool when disaggregated
  int gpus_ = 0;
  long long total_ = 0, next_index_ = 0;
  int batch_left_ = 0;
  double now_ = 0, next_arrival_s_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t order_ = 0;
  std::vector<double> ingress_free_s_;
  std::vector<std::pair<size_t, Seq>> transfers_;
  std::vector<size_t> free_slots_;
  double kv_bytes_per_token_ = 0;
  int transfer_shards_ = 1;
};

}  // namespace

ServingResult simulate_serving(const ServingConfig& config, const Workload& workload,
                               const workload::ModelConfig& model, const ServingHardware& hardware, const Slo& slo,
                               const SimOptions& options) {
  return Simulation(config, workload, model, hardware, slo, options).run();
}

}  // namespace stacksim::serving
