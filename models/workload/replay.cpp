#include "models/workload/replay.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <unordered_map>
#include <tuple>
#include <stdexcept>

#include "config/error.hpp"
#include "config/output_file.hpp"
#include "models/workload/pipeline_schedule.hpp"
#include "sim/trace.hpp"

namespace stacksim::workload {
namespace {

const std::vector<std::string> kCategoryNames = {
    "gemm", "attention", "elementwise", "optimizer", "tp_comm", "cp_comm", "ep_comm",
    "pp_comm", "dp_comm", "pipeline_bubble", "data_wait", "checkpoint", "host_launch", "activation_offload", "idle"};

uint16_t comm_category(Group g) {
  switch (g) {
    case Group::TP: return kCatTpComm;
    case Group::CP: return kCatCpComm;
    case Group::EP: return kCatEpComm;
    case Group::DP:
    case Group::DpShard:
    case Group::DpReplicate:
    case Group::ExpertDp: return kCatDpComm;
  }
  return kCatTpComm;
}

// A communication interval attributed to a stage's representative rank: the tasks
// [first, exit] of one or more collectives appended together.
struct CommSpan {
  int stage;
  uint16_t category;
  sim::TaskId first;
  sim::TaskId exit;
};

class StepBuilder {
 public:
  StepBuilder(const StepProgram& p, const topo::Cluster& cluster, const coll::CommTuning& tuning)
      : p_(p), cluster_(cluster), tuning_(tuning) {
    link_res_ = cluster.bind(engine_);
    gpu_res_.reserve(cluster.num_gpus());
    for (int r = 0; r < cluster.num_gpus(); ++r)
      gpu_res_.push_back(engine_.add_resource({"gpu" + std::to_string(r) + ".sm", 1.0}));
    stages_.resize(p.pp);
    for (int s = 0; s < p.pp; ++s) {
      const int rep = global_rank(p, 0, 0, 0, s);
      const std::string proc = "stage " + std::to_string(s) + " (gpu " + std::to_string(rep) + ")";
      stages_[s].rep = rep;
      stages_[s].compute_track = g_.add_track(proc, "compute");
      stages_[s].comm_track = g_.add_track(proc, "tp/cp/ep comm");
      stages_[s].pp_track = g_.add_track(proc, "pp receive");
      if (paired()) {  // F&B pairs (DualPipe, ep_overlap): the backward chunk's own tracks
        stages_[s].paired_compute_track = g_.add_track(proc, "compute (paired backward)");
        stages_[s].paired_comm_track = g_.add_track(proc, "tp/cp/ep comm (paired backward)");
      }
      stages_[s].dp_track = g_.add_track(proc, "dp comm");
      if (p.offload_activations) stages_[s].offload_track = g_.add_track(proc, "activation offload (PCIe)");
      if (p.offload_params) stages_[s].param_track = g_.add_track(proc, "parameter shards from host (PCIe)");
      if (host_modelled()) {
        stages_[s].host_track = g_.add_track(proc, "host launches");
        if (paired())
          stages_[s].paired_host_track = g_.add_track(proc, "host launches (paired backward)");
      }
      stages_[s].cursor = add_join({});
    }
  }

  ReplayResult run(const ReplayOptions& options) {
    // Where no op list can put the host behind its GPU, the host chain would only delay each
    // stage's first launched work by one launch: that launch stands for it (the same result, a
    // fraction of the tasks).
    launches_free_ = host_modelled() && options.host_shortcut && host_stays_ahead();
    build_batch_copy();
    build_pipeline();
    build_tail();
    sim::ExecutionResult r = sim::execute(engine_, g_);
    if (!r.completed) throw std::logic_error("replay: the step's task graph has a dependency cycle");
    if (!options.trace_path.empty())
      config::write_output_file(options.trace_path,
                                [&](std::ostream& out) { sim::write_chrome_trace(g_, r, kCategoryNames, out); });
    ReplayResult out;
    out.step_time_s = r.makespan.seconds();
    out.tasks = g_.size();
    out.engine_stats = engine_.stats();
    // The critical stage is the busiest one (the least idle time): with balanced stages the first
    // (it runs the last backward and its data-parallel tail); with unbalanced ones the stage that
    // paces the pipeline, whose breakdown says why.
    for (int s = 0; s < p_.pp; ++s) {
      std::vector<double> b = breakdown(r, s);
      if (s == 0 || idle_s(b) < idle_s(out.breakdown_s) - 1e-9 * out.step_time_s) {
        out.critical_stage = s;
        out.breakdown_s = std::move(b);
      }
    }
    return out;
  }

 private:
  struct StageState {
    int rep = 0;
    sim::TrackId compute_track = 0, comm_track = 0, dp_track = 0, pp_track = 0;
    sim::TrackId paired_compute_track = 0, paired_comm_track = 0;
    bool on_paired_tracks = false;  // building the second item of an F&B pair
    sim::TrackId compute_now() const { return on_paired_tracks ? paired_compute_track : compute_track; }
    sim::TrackId comm_now() const { return on_paired_tracks ? paired_comm_track : comm_track; }
    sim::TaskId cursor = sim::kNoTask;
    sim::TrackId host_track = 0, paired_host_track = 0;
    sim::TrackId offload_track = 0;  // activation copies to and from host memory
    sim::TrackId param_track = 0;    // offloaded parameter shards to the GPU
    // The host thread's last kernel launches. DualPipe's F&B pairs interleave the launches of
    // their two chunks; the paired chunk's are a chain of their own.
    sim::TaskId host = sim::kNoTask, paired_host = sim::kNoTask;
    sim::TaskId& host_now() { return on_paired_tracks ? paired_host : host; }
    sim::TaskId dp_cursor = sim::kNoTask;   // data-parallel stream (gradient buckets, gathers)
    sim::TaskId edp_cursor = sim::kNoTask;  // expert data-parallel stream (its own communicator)
    sim::TaskId ag_cursor = sim::kNoTask;   // FSDP all-gather stream
    sim::TaskId rs_cursor = sim::kNoTask;   // FSDP reduce-scatter stream
    // Gradient readiness of the last micro-batch, in backward order.
    struct GradsReady {
      sim::TaskId task;
      double bytes, expert_bytes;  // over DP; over ExpertDp
    };
    std::vector<GradsReady> grads_ready;
    // ZeRO-1/2 overlapped parameter gather: per chunk, the bucket holding the embedding/output
    // layer (or none) and each layer's bucket, in forward order.
    std::vector<sim::TaskId> chunk_head_gather;
    std::vector<std::vector<sim::TaskId>> chunk_layer_gather;
  };

  sim::TaskId add_join(const std::vector<sim::TaskId>& deps, sim::TrackId track = sim::kNoTrack) {
    sim::TaskSpec t;
    t.track = sim::kNoTrack;
    (void)track;
    const sim::TaskId id = g_.add(t);
    for (sim::TaskId d : deps)
      if (d != sim::kNoTask) g_.add_dependency(d, id);
    return id;
  }

  // A kernel of `seconds` (on a whole GPU) on stage s's reduction stream: it holds the GPU like
  // compute does, so compute running meanwhile shares the GPU with it (max-min).
  sim::TaskId side_stream_kernel(int s, const char* name, double seconds, const std::vector<sim::TaskId>& deps) {
    sim::TaskSpec t;
    t.activity.work = seconds;
    t.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
    t.category = kCatElementwise;
    t.track = stages_[s].dp_track;
    t.name = g_.intern(name);
    const sim::TaskId id = g_.add(t);
    for (sim::TaskId d : deps)
      if (d != sim::kNoTask) g_.add_dependency(d, id);
    return id;
  }

  // The stage's host thread launching `launches` kernels, in program order, for the GPU work that
  // follows; at a host sync the thread first waits for the GPU work launched so far. The host runs
  // ahead of the GPU otherwise, so launches cost GPU time only where the host falls behind:
  // kernels shorter than their launch, or the work right after a sync. Two tasks: the first
  // launch, which the work waits for, and the rest, which the work cannot finish before (a run of
  // kernels starts with its first launch and keeps pace with the others). {kNoTask, kNoTask} when
  // launches are free. The launches of data-parallel and pipeline transfers (a few per layer, off
  // the compute stream) are not charged.
  struct Launches {
    sim::TaskId first = sim::kNoTask, rest = sim::kNoTask;
  };
  Launches host_launch(int s, int launches, bool sync) {
    Launches out;
    if (!host_modelled() || launches <= 0) return out;
    StageState& st = stages_[s];
    if (launches_free_ && st.host_now() != sim::kNoTask) return out;  // only the first launch counts
    if (launches_free_) launches = 1;
    // The stage's first launch comes after the step's fixed host work (StepProgram::host_step_s)
    // and, the host thread's too, a blocking batch copy (pageable, or loaded by the process itself).
    const bool step_start = !st.on_paired_tracks && st.host == sim::kNoTask;
    auto add = [&](int n, const char* name, bool after_step_work) {
      sim::TaskSpec t;
      t.activity.latency = sim::Time::from_seconds(n * p_.host_launch_s + (after_step_work ? p_.host_step_s : 0.0));
      t.category = kCatHostLaunch;
      t.track = st.on_paired_tracks ? st.paired_host_track : st.host_track;
      t.name = g_.intern(name);
      const sim::TaskId id = g_.add(t);
      sim::TaskId& chain = st.host_now();
      if (chain != sim::kNoTask) g_.add_dependency(chain, id);
      if (after_step_work && p_.batch_copy_blocking && batch_copy_ != sim::kNoTask) g_.add_dependency(batch_copy_, id);
      chain = id;
      return id;
    };
    const char* first = sync                               ? "kernel launch (after a host sync)"
                        : step_start && p_.host_step_s > 0 ? "step host work + kernel launch"
                                                           : "kernel launches";
    out.first = add(1, first, step_start);
    if (sync) g_.add_dependency(st.cursor, out.first);
    if (launches > 1) out.rest = add(launches - 1, "kernel launches", false);
    return out;
  }

  bool host_modelled() const { return p_.host_launch_s > 0 || p_.host_step_s > 0; }
  // Whether the schedule runs forward and backward items in concurrent pairs.
  bool paired() const { return p_.schedule == ScheduleKind::DualPipe || p_.pair_forward_backward; }

  // True when the host provably never falls behind the GPU after the step's first launch. Along an
  // op list in issue order, the host's lead changes by each op's GPU seconds less its launches
  // (a collective counted as no GPU time; waits only add to the lead). A list ends with the lead
  // it started with plus its surplus; every list must have a surplus, so a list that follows
  // another starts at least the smallest surplus ahead, and must never fall further behind than
  // that; the step's first list (the embedding, on stage 0) starts level, its first launch
  // aside. (The first list of a later stage starts once an activation arrived, later than the
  // previous stage's first list's surplus.) No host sync anywhere; DualPipe, whose backward
  // lists are split at replay time, always takes the chain.
  bool host_stays_ahead() const {
    if (paired()) return false;
    struct Walk {
      double behind_s = 0, surplus_s = 0;  // the furthest behind along the list; its net lead gained
      bool sync = false;
    };
    // `lead_s`: where the list starts relative to its own ops (FSDP 2's copy-out before a layer,
    // a launched kernel outside the lists, can only count against it: it may not run).
    const auto walk = [&](const std::vector<CostedOp>& ops, double lead_s = 0) {
      Walk w;
      w.behind_s = std::max(0.0, -lead_s);
      for (const CostedOp& op : ops) {
        w.sync = w.sync || op.host_sync;
        lead_s += (op.kind == CostedOp::Kind::Compute ? op.seconds : 0.0) - op.launches * p_.host_launch_s;
        w.behind_s = std::max(w.behind_s, -lead_s);
      }
      w.surplus_s = lead_s;
      return w;
    };
    if (p_.pre_forward.empty()) return false;  // the step's first list is then a layer's
    const Walk first = walk(p_.pre_forward);
    if (first.sync || first.behind_s > 0 || first.surplus_s < 0) return false;
    double least_surplus_s = first.surplus_s;
    std::vector<Walk> walks;
    const auto add = [&](const std::vector<CostedOp>& ops, double lead_s) {
      if (ops.empty()) return true;
      walks.push_back(walk(ops, lead_s));
      least_surplus_s = std::min(least_surplus_s, walks.back().surplus_s);
      return !walks.back().sync && walks.back().surplus_s >= 0;
    };
    if (!add(p_.post_forward, 0) || !add(p_.pre_backward, 0) || !add(p_.post_backward, 0) || !add(p_.optimizer, 0))
      return false;
    for (const LayerProgram& l : p_.layers) {
      const double copy_s = l.fsdp_gather_copy_s > 0 ? std::min(0.0, l.fsdp_gather_copy_s - p_.host_launch_s) : 0.0;
      if (!add(l.forward, copy_s) || !add(l.backward, copy_s)) return false;
    }
    for (const Walk& w : walks)
      if (w.behind_s > least_surplus_s) return false;
    return true;
  }

  // GPU work `gpu` (on stage s, after `previous`) waiting for launches `host`: kept for the
  // breakdown, which counts the wait as host_launch time.
  void wait_for_launch(int s, sim::TaskId host, sim::TaskId gpu, sim::TaskId previous) {
    g_.add_dependency(host, gpu);
    launch_waits_.push_back({s, host, gpu, previous});
  }

  // One task for a run of consecutive compute ops (a kernel sequence on the stream): the replay
  // cost is per task, and nothing can interleave with the ops of one stream anyway. The parts are
  // kept for the breakdown.
  sim::TaskId add_compute(int s, const CostedOp* first, const CostedOp* last) {
    sim::TaskSpec t;
    double seconds = 0;
    int launches = 0;
    const uint32_t part0 = static_cast<uint32_t>(parts_.size());
    for (const CostedOp* op = first; op != last; ++op) {
      seconds += op->seconds;
      launches += op->launches;
      parts_.push_back({op->category, op->seconds});
    }
    const sim::TaskId previous = stages_[s].cursor;
    const Launches host = host_launch(s, launches, first->host_sync);
    t.activity.work = seconds;
    t.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
    t.category = first->category;
    t.track = stages_[s].compute_now();
    const std::string name = last - first == 1 ? first->name : first->name + " .. " + (last - 1)->name;
    t.name = g_.intern(name);
    const sim::TaskId id = g_.add(t);
    g_.add_dependency(stages_[s].cursor, id);
    stages_[s].cursor = id;
    if (host.first != sim::kNoTask) wait_for_launch(s, host.first, id, previous);
    if (host.rest != sim::kNoTask) {  // the run ends no earlier than its last launch
      const sim::TaskId done = add_join({id});
      wait_for_launch(s, host.rest, done, id);
      stages_[s].cursor = done;
    }
    if (task_stage_.size() <= id) task_stage_.resize(id + 1, -1);
    task_stage_[id] = s;
    if (task_parts_.size() <= id) task_parts_.resize(id + 1, {0, 0});
    task_parts_[id] = {part0, static_cast<uint32_t>(parts_.size() - part0)};
    return id;
  }

  int group_size(Group g) const { return workload::group_size(p_, g); }

  // Ranks of every group of kind `g` that the ranks of stage s (data-parallel replica 0 for
  // TP/CP; all replicas for DP/EP) belong to.
  std::vector<std::vector<int>> groups(Group g, int s) const {
    std::vector<std::vector<int>> out;
    switch (g) {
      case Group::TP:
        for (int c = 0; c < p_.cp; ++c) {
          std::vector<int> r;
          for (int t = 0; t < p_.tp; ++t) r.push_back(global_rank(p_, t, c, 0, s));
          out.push_back(r);
        }
        break;
      case Group::CP:
        for (int t = 0; t < p_.tp; ++t) {
          std::vector<int> r;
          for (int c = 0; c < p_.cp; ++c) r.push_back(global_rank(p_, t, c, 0, s));
          out.push_back(r);
        }
        break;
      case Group::EP:
        // Expert parallelism is carved out of context x data parallelism (expert_span), or of
        // tensor x context x data parallelism with whole experts.
        if (p_.experts_folded) {
          for (int first = 0; first < expert_span(p_); first += p_.ep) {
            std::vector<int> r;
            for (int e = first; e < first + p_.ep; ++e)
              r.push_back(global_rank(p_, e % p_.tp, (e / p_.tp) % p_.cp, e / (p_.tp * p_.cp), s));
            out.push_back(r);
          }
          break;
        }
        for (int t = 0; t < p_.tp; ++t)
          for (int first = 0; first < expert_span(p_); first += p_.ep) {
            std::vector<int> r;
            for (int e = first; e < first + p_.ep; ++e) r.push_back(global_rank(p_, t, e % p_.cp, e / p_.cp, s));
            out.push_back(r);
          }
        break;
      case Group::ExpertDp: {
        // The ranks at the same place in their expert-parallel groups (blocks of ep consecutive
        // expert indices, as Group::EP): expert indices equal modulo ep.
        const int width = p_.experts_folded ? p_.tp * p_.cp * p_.dp : p_.cp * p_.dp;
        for (int t = 0; t < (p_.experts_folded ? 1 : p_.tp); ++t)
          for (int j = 0; j < p_.ep; ++j) {
            std::vector<int> r;
            for (int e = j; e < width; e += p_.ep)
              r.push_back(p_.experts_folded ? global_rank(p_, e % p_.tp, (e / p_.tp) % p_.cp, e / (p_.tp * p_.cp), s)
                                            : global_rank(p_, t, e % p_.cp, e / p_.cp, s));
            out.push_back(r);
          }
        break;
      }
      case Group::DP:
      case Group::DpShard:
      case Group::DpReplicate: {
        // Gradients (and ZeRO/FSDP shards) are reduced over data AND context parallelism
        // (Megatron's data-parallel-with-context-parallel group): cp ranks hold the same weights.
        // Index e = c + cp * d; shard groups are blocks of shard_size consecutive e, replicate
        // groups the e that are equal modulo shard_size.
        const int n = p_.dp * p_.cp, shard = shard_ranks();
        const auto rank_of = [&](int t, int e) { return global_rank(p_, t, e % p_.cp, e / p_.cp, s); };
        for (int t = 0; t < p_.tp; ++t) {
          if (g == Group::DP || (g == Group::DpShard && shard == n)) {
            std::vector<int> r;
            for (int e = 0; e < n; ++e) r.push_back(rank_of(t, e));
            out.push_back(r);
          } else if (g == Group::DpShard) {
            for (int first = 0; first < n; first += shard) {
              std::vector<int> r;
              for (int e = first; e < first + shard; ++e) r.push_back(rank_of(t, e));
              out.push_back(r);
            }
          } else {
            for (int j = 0; j < shard; ++j) {
              std::vector<int> r;
              for (int e = j; e < n; e += shard) r.push_back(rank_of(t, e));
              out.push_back(r);
            }
          }
        }
        break;
      }
    }
    return out;
  }

  // Appends the collective `op` on every group of kind `g` of stage s, all starting after `deps`.
  // Returns a task that completes when all of them have (or kNoTask if the groups are trivial).
  sim::TaskId add_group_collective(int s, Group g, coll::CollectiveOp op, double bytes,
                                   const std::vector<sim::TaskId>& deps, sim::TrackId track,
                                   uint16_t category, const coll::MoeDispatch& dispatch = {}) {
    const auto gs = groups(g, s);
    if (gs.empty() || gs.front().size() < 2 || bytes <= 0) return sim::kNoTask;
    const sim::TaskId first = static_cast<sim::TaskId>(g_.size());
    std::vector<sim::TaskId> exits;
    for (const auto& ranks : gs) {
      coll::Collective c;
      c.op = op;
      c.ranks = ranks;
      c.bytes = bytes;
      c.dispatch = dispatch;
      // SM sharing is modelled by the companion task below, not by the flows.
      exits.push_back(coll::append_collective(g_, cluster_, link_res_, tuning_, c, deps, category,
                                              track, collective_cache_));
    }
    const sim::TaskId exit = exits.size() == 1 ? exits.front() : add_join(exits);
    spans_.push_back({s, category, first, exit});
    // Collectives off the compute stream overlap compute; their kernels hold a share of the SMs
    // for about their duration, which overlapped compute loses (max-min: the companion is bounded
    // at the share, compute takes the rest).
    if (g != Group::TP && g != Group::EP && tuning_.sm_fraction > 0) {
      coll::Collective c;
      c.op = op;
      c.ranks = gs.front();
      c.bytes = bytes;
      sim::TaskSpec sm;
      // Collectives of one shape repeat every micro-batch: estimate each shape once.
      const auto key = std::make_tuple(static_cast<int>(op), bytes, c.ranks);
      auto it = estimates_.find(key);
      if (it == estimates_.end()) it = estimates_.emplace(key, coll::estimate_seconds(cluster_, tuning_, c)).first;
      sm.activity.work = tuning_.sm_fraction * it->second;
      sm.activity.bound = tuning_.sm_fraction;
      sm.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
      const sim::TaskId id = g_.add(sm);
      for (sim::TaskId d : deps)
        if (d != sim::kNoTask) g_.add_dependency(d, id);
    }
    return exit;
  }

  void run_collective_op(int s, const CostedOp& op, std::vector<sim::TaskId>& pending_overlap) {
    const uint16_t cat = comm_category(op.group);
    std::vector<sim::TaskId> deps{stages_[s].cursor};
    // Its one launch (a collective of a single rank is none; host_launch says when it is free).
    sim::TaskId host = sim::kNoTask;
    if (op.bytes > 0 && group_size(op.group) >= 2) host = host_launch(s, op.launches, op.host_sync).first;
    // A join gates the collective on its launch (the breakdown's wait ends where the join does).
    if (host != sim::kNoTask) {
      const sim::TaskId gate = add_join({});
      wait_for_launch(s, host, gate, stages_[s].cursor);
      g_.add_dependency(stages_[s].cursor, gate);
      deps = {gate};
    }
    const sim::TaskId exit = add_group_collective(s, op.group, op.op, op.bytes, deps, stages_[s].comm_now(), cat,
                                                  op.dispatch);
    if (exit == sim::kNoTask) return;
    if (op.overlaps_next)
      pending_overlap.push_back(exit);  // joined after the next compute op
    else
      stages_[s].cursor = add_join({stages_[s].cursor, exit});
  }

  void run_ops(int s, const std::vector<CostedOp>& ops) {
    std::vector<sim::TaskId> pending;
    for (size_t i = 0; i < ops.size();) {
      if (ops[i].kind == CostedOp::Kind::Collective) {
        run_collective_op(s, ops[i], pending);
        ++i;
        continue;
      }
      // A collective overlapping "the next compute op" is joined after that op alone.
      size_t j = i + 1;
      if (pending.empty())  // a host sync starts a run of its own (the host waits before it)
        while (j < ops.size() && ops[j].kind == CostedOp::Kind::Compute && !ops[j].host_sync) ++j;
      add_compute(s, ops.data() + i, ops.data() + j);
      i = j;
      if (!pending.empty()) {
        pending.push_back(stages_[s].cursor);
        stages_[s].cursor = add_join(pending);
        pending.clear();
      }
    }
    if (!pending.empty()) {
      pending.push_back(stages_[s].cursor);
      stages_[s].cursor = add_join(pending);
    }
  }

  int shard_ranks() const { return p_.shard_size > 0 ? p_.shard_size : p_.dp * p_.cp; }

  // Whether any rank shares its weights with another: data and context parallelism (Megatron's
  // data-parallel-with-context-parallel group; torchtitan's FSDP over dp x cp), or the routed
  // experts' own data-parallel group.
  bool reduces_gradients() const { return p_.dp * p_.cp > 1 || group_size(Group::ExpertDp) > 1; }

  // Gradients of `bytes` to their ZeRO/FSDP owners: reduce-scattered over the shard group, then
  // (hybrid sharding) each shard all-reduced over its replicas. Returns the last task.
  sim::TaskId reduce_scatter_gradients(int s, double bytes, const std::vector<sim::TaskId>& deps) {
    StageState& st = stages_[s];
    sim::TaskId e = add_group_collective(s, Group::DpShard, coll::CollectiveOp::ReduceScatter, bytes, deps,
                                         st.dp_track, kCatDpComm);
    if (shard_ranks() < p_.dp * p_.cp) {
      std::vector<sim::TaskId> after = deps;
      if (e != sim::kNoTask) after = {e};
      const sim::TaskId ar = add_group_collective(s, Group::DpReplicate, coll::CollectiveOp::AllReduce,
                                                  bytes / shard_ranks(), after, st.dp_track, kCatDpComm);
      if (ar != sim::kNoTask) e = ar;
    }
    return e;
  }

  // FSDP: gather one layer's parameters on the all-gather stream, at most two layers ahead of
  // the compute that needs them (PyTorch FSDP's forward/backward prefetch of one unit); routed
  // experts sharded over their own group are gathered there next.
  sim::TaskId fsdp_gather(int s, const LayerProgram& layer, sim::TaskId limiter) {
    StageState& st = stages_[s];
    sim::TaskId exit = sim::kNoTask;
    for (const auto& [group, bytes] : {std::pair{Group::DpShard, layer.param_bytes}, {Group::ExpertDp, layer.expert_param_bytes}}) {
      std::vector<sim::TaskId> deps{st.ag_cursor, limiter};
      sim::TaskId fetched = sim::kNoTask;
      if (p_.offload_params && bytes > 0) {
        // The shard lives in host memory: it crosses PCIe before the gather can start.
        fetched = add_host_copies(cluster_.node_of_gpu(st.rep), bytes / std::max(1, group_size(group)), false, deps,
                                  "parameter shard from host", st.param_track, kCatDpComm);
        param_copies_[s].push_back(fetched);
        deps = {fetched};
      }
      sim::TaskId e = add_group_collective(s, group, coll::CollectiveOp::AllGather, bytes, deps, st.dp_track, kCatDpComm);
      if (e == sim::kNoTask) e = fetched;  // nothing to gather (one rank): the fetch alone
      if (e != sim::kNoTask) exit = st.ag_cursor = e;
    }
    return exit;
  }

  void build_item(int s, const PipelineItem& it) {
    StageState& st = stages_[s];
    const int vs = vstage(it.chunk, s);
    const auto [l0, l1] = layer_range(model_stage(vs));
    // Offloaded parameters are fetched per layer even with nothing to gather or reduce (one rank).
    const bool fsdp = p_.zero >= 3 && (reduces_gradients() || p_.offload_params);
    const bool last_mb = it.micro_batch == last_micro_batch(it.chunk);
    // FSDP under a pipeline (torchtitan: FSDP2 + torch.distributed.pipelining) keeps each stage's
    // gathered parameters for all its micro-batches (reshard_after_forward is off with PP, "to avoid
    // per-microbatch all-gathers") and reduce-scatters the gradients after the last micro-batch
    // (the schedule turns gradient sync off before it). Without a pipeline every micro-batch
    // gathers in forward and backward and reduce-scatters (FSDP's FULL_SHARD).
    const bool keep_gathered = fsdp && p_.pp > 1;
    const bool gather = fsdp && (!keep_gathered || (!it.backward && it.micro_batch == 0));
    const bool reduce_now = !keep_gathered || last_mb;

    const bool gathered_ahead = !it.backward && it.micro_batch == first_micro_batch(it.chunk) &&
                                it.chunk < static_cast<int>(st.chunk_layer_gather.size());
    std::vector<sim::TaskId> gate_deps{st.cursor};
    if (gathered_ahead) gate_deps.push_back(st.chunk_head_gather[it.chunk]);
    st.cursor = add_join(gate_deps);
    const sim::TaskId entry = st.cursor;
    item_entry_[key(it, s)] = entry;

    std::vector<sim::TaskId> layer_done;  // compute end per processed layer (for FSDP prefetch)
    const int chunk_first_layer = l0;     // (clang 14 cannot capture a structured binding)
    auto run_layer = [&](int l, const std::vector<CostedOp>& ops) {
      if (gathered_ahead)
        st.cursor = add_join({st.cursor, st.chunk_layer_gather[it.chunk][l - chunk_first_layer]});
      if (gather) {
        const sim::TaskId limiter = layer_done.size() >= 2 ? layer_done[layer_done.size() - 2] : entry;
        const sim::TaskId gathered = fsdp_gather(s, p_.layers[l], limiter);
        st.cursor = add_join({st.cursor, gathered});
        if (p_.layers[l].fsdp_gather_copy_s > 0) {  // FSDP 2's copy-out, on the compute stream
          CostedOp copy;
          copy.name = "fsdp gather copy-out";
          copy.category = kCatElementwise;
          copy.seconds = p_.layers[l].fsdp_gather_copy_s;
          add_compute(s, &copy, &copy + 1);
        }
      }
      run_ops(s, ops);
      layer_done.push_back(st.cursor);
    };

    // A zero-bubble backward runs the input gradients only; its `weight` item the wgrads (and
    // then hands the gradients to data-parallel reduction).
    const Part part = it.weight ? Part::Weight : it.defer_weight ? Part::Input : Part::Both;
    if (!it.backward) {
      if (first_position(vs)) run_ops(s, p_.pre_forward);
      std::vector<sim::TaskId>* to_host = nullptr;
      if (p_.offload_activations) (to_host = &offloaded_[key(it, s)])->assign(l1 - l0, sim::kNoTask);
      for (int l = l0; l < l1; ++l) {
        run_layer(l, p_.layers[l].forward);
        // The layer's saved activations to host memory, off the compute stream.
        if (to_host) {
          (*to_host)[l - l0] = add_host_copies(cluster_.node_of_gpu(st.rep), p_.layers[l].offload_bytes, true,
                                               {st.cursor}, "activations to host", st.offload_track, kCatOffload);
          if ((*to_host)[l - l0] != sim::kNoTask) activation_copies_[s].push_back((*to_host)[l - l0]);
        }
      }
      if (last_position(vs)) run_ops(s, p_.post_forward);
    } else if (part == Part::Input) {
      if (last_position(vs)) run_ops(s, backward_part(p_.pre_backward, part));
      for (int l = l1 - 1; l >= l0; --l) run_layer(l, backward_part(p_.layers[l].backward, part));
      if (first_position(vs)) run_ops(s, backward_part(p_.post_backward, part));
    } else {
      // Gradients leave for data-parallel reduction as they are produced: FSDP reduce-scatters
      // each unit right away, the others bucket the last micro-batch's (build_tail).
      auto gradients_ready = [&](double bytes, double expert_bytes, double fsdp_prep_s) {
        if (fsdp) {
          if (!reduce_now) return;
          // FSDP's cast/copy of the unsharded gradient runs on the reduction stream ahead of
          // the reduce-scatter, sharing the GPU with the backward compute that goes on.
          std::vector<sim::TaskId> deps{st.rs_cursor, st.cursor};
          if (fsdp_prep_s > 0) deps = {side_stream_kernel(s, "fsdp gradient cast/copy", fsdp_prep_s, deps)};
          sim::TaskId rs = reduce_scatter_gradients(s, bytes, deps);
          if (rs != sim::kNoTask) deps = {rs};
          const sim::TaskId expert_rs = add_group_collective(s, Group::ExpertDp, coll::CollectiveOp::ReduceScatter,
                                                             expert_bytes, deps, st.dp_track, kCatDpComm);
          if (expert_rs != sim::kNoTask) rs = expert_rs;
          if (rs != sim::kNoTask) st.rs_cursor = rs;
          if (p_.offload_optimizer) {  // each reduced shard to the host's optimizer at once (fp32)
            const int node = cluster_.node_of_gpu(st.rep);
            const sim::TaskId ready = rs != sim::kNoTask ? rs : st.cursor;  // nothing to reduce: one rank
            for (const auto& [group, b] : {std::pair{Group::DpShard, bytes}, {Group::ExpertDp, expert_bytes}}) {
              const sim::TaskId copy = add_host_copies(node, b / std::max(1, group_size(group)) * p_.offload_d2h_per_grad_byte,
                                                       true, {ready}, "gradient shard to host", st.dp_track);
              if (copy != sim::kNoTask) offload_tasks_[s].push_back(copy);
            }
          }
        } else if (last_mb) {
          st.grads_ready.push_back({st.cursor, bytes, expert_bytes});
        }
      };
      if (last_position(vs)) {
        run_ops(s, backward_part(p_.pre_backward, part));
        gradients_ready(p_.head_grad_bytes, 0.0, p_.head_fsdp_grad_prep_s);
      }
      // Offloaded activations come back one layer ahead: layer l's copy starts as the backward of
      // the layer after it starts, and layer l's backward waits for it.
      const auto offloaded = p_.offload_activations ? offloaded_.find(key(it.micro_batch, vs, false)) : offloaded_.end();
      sim::TaskId prefetch_gate = st.cursor;
      for (int l = l1 - 1; l >= l0; --l) {
        if (offloaded != offloaded_.end()) {
          const sim::TaskId back =
              add_host_copies(cluster_.node_of_gpu(st.rep), p_.layers[l].offload_bytes, false,
                              {offloaded->second[l - l0], prefetch_gate}, "activations from host", st.offload_track, kCatOffload);
          if (back != sim::kNoTask) {
            activation_copies_[s].push_back(back);
            st.cursor = add_join({st.cursor, back});
          }
          prefetch_gate = st.cursor;
        }
        run_layer(l, backward_part(p_.layers[l].backward, part));
        gradients_ready(p_.layers[l].grad_bytes, p_.layers[l].expert_grad_bytes, p_.layers[l].fsdp_grad_prep_s);
      }
      if (first_position(vs)) {
        run_ops(s, backward_part(p_.post_backward, part));
        gradients_ready(p_.embedding_grad_bytes, 0.0, p_.embedding_fsdp_grad_prep_s);
      }
    }
    item_exit_[key(it, s)] = st.cursor;
  }

  // Which ops of a backward list an item runs: all, the input-gradient part (every op but the
  // wgrads) or the weight part (the wgrads alone).
  enum class Part { Both, Input, Weight };
  const std::vector<CostedOp>& backward_part(const std::vector<CostedOp>& ops, Part part) {
    if (part == Part::Both) return ops;
    auto it = split_cache_.find(&ops);
    if (it == split_cache_.end()) {
      std::pair<std::vector<CostedOp>, std::vector<CostedOp>> split;
      for (const CostedOp& op : ops) (op.weight_grad ? split.second : split.first).push_back(op);
      it = split_cache_.emplace(&ops, std::move(split)).first;
    }
    return part == Part::Input ? it->second.first : it->second.second;
  }

  // An item's identity: micro-batch, pipeline position, backward, deferred weight part.
  static uint64_t key(int mb, int vs, bool backward, bool weight = false) {
    return (static_cast<uint64_t>(mb) << 34) | (static_cast<uint64_t>(vs) << 2) | (weight ? 2 : 0) | (backward ? 1 : 0);
  }
  uint64_t key(const PipelineItem& it, int s) const {
    return key(it.micro_batch, vstage(it.chunk, s), it.backward, it.weight);
  }

  ScheduleKind schedule_kind() const {
    return p_.schedule == ScheduleKind::OneFOneB && p_.vp > 1 ? ScheduleKind::Interleaved : p_.schedule;
  }

  // Pipeline positions. Megatron's schedules: pp*vp virtual stages, chunk c of rank s at c*pp + s.
  // DualPipe: two pipelines of pp positions over the same pp model stages; position j of the
  // forward direction is rank j, position pp + j of the reverse direction is rank pp-1-j, and
  // micro-batches [0, m/2) take the first, [m/2, m) the second.
  bool dualpipe() const { return p_.schedule == ScheduleKind::DualPipe; }
  int chunks() const { return dualpipe() ? 2 : p_.vp; }
  int positions() const { return dualpipe() ? 2 * p_.pp : p_.pp * p_.vp; }
  int vstage(int chunk, int s) const { return dualpipe() ? (chunk == 0 ? s : 2 * p_.pp - 1 - s) : virtual_stage(chunk, s, p_.pp); }
  int model_stage(int vs) const { return dualpipe() ? vs % p_.pp : vs; }
  int rank_of_position(int vs) const {
    return dualpipe() ? (vs < p_.pp ? vs : 2 * p_.pp - 1 - vs) : vs % p_.pp;
  }
  bool first_position(int vs) const { return dualpipe() ? vs % p_.pp == 0 : vs == 0; }
  bool last_position(int vs) const { return dualpipe() ? vs % p_.pp == p_.pp - 1 : vs == positions() - 1; }
  int first_micro_batch(int chunk) const { return dualpipe() ? chunk * (p_.micro_batches / 2) : 0; }
  int last_micro_batch(int chunk) const {
    return dualpipe() ? (chunk + 1) * (p_.micro_batches / 2) - 1 : p_.micro_batches - 1;
  }

  // The next step's batch, copied host to device for every GPU of the nodes that hold a stage's
  // representative rank, each over the route from its nearest CPU socket: its switch's uplink,
  // shared with the neighbour GPUs' copies, and the GPU's own PCIe link, shared with its NIC
  // traffic (GPUDirect RDMA) and staged transfers. The other nodes copy the same over their own
  // PCIe trees and so load the collectives' routes there as these copies do here (symmetry). One
  // activity over the union of the routes, as a merged collective phase.
  // The links of every GPU's host copy on the nodes marked in `on_node`, each over the route from
  // (to_host: to) the GPU's nearest CPU socket, with the number of copies on each.
  std::map<topo::LinkId, int> host_copy_links(const std::vector<char>& on_node, bool to_host) const {
    std::vector<std::vector<topo::DeviceId>> sockets(cluster_.num_nodes());
    for (topo::DeviceId d = 0; d < cluster_.num_devices(); ++d) {
      const topo::Device& dev = cluster_.device(d);
      if (dev.kind == topo::DeviceKind::Cpu && dev.node >= 0 && on_node[dev.node]) sockets[dev.node].push_back(d);
    }
    std::map<topo::LinkId, int> flows_on_link;
    for (int r = 0; r < cluster_.num_gpus(); ++r) {
      const int node = cluster_.node_of_gpu(r);
      if (!on_node[node]) continue;
      if (sockets[node].empty()) throw std::invalid_argument("replay: a host copy needs a CPU socket on the GPU's node");
      topo::Route best;
      for (topo::DeviceId socket : sockets[node]) {
        topo::Route route = to_host ? cluster_.route(cluster_.gpu(r), socket) : cluster_.route(socket, cluster_.gpu(r));
        if (best.links.empty() || route.links.size() < best.links.size()) best = std::move(route);
      }
      for (topo::LinkId l : best.links) ++flows_on_link[l];
    }
    return flows_on_link;
  }

  void build_batch_copy() {
    if (p_.batch_copy_bytes <= 0) return;
    std::vector<char> copies_on_node(cluster_.num_nodes(), 0);
    for (const StageState& st : stages_) copies_on_node[cluster_.node_of_gpu(st.rep)] = 1;
    const std::map<topo::LinkId, int> flows_on_link = host_copy_links(copies_on_node, false);
    sim::TaskSpec t;
    t.activity.work = p_.batch_copy_bytes;
    t.activity.bound = p_.batch_copy_Bps;
    for (const auto& [l, n] : flows_on_link) t.activity.usages.push_back({link_res_[l], static_cast<double>(n)});
    t.category = kCatDataWait;
    t.track = g_.add_track("host", p_.batch_copy_blocking ? "batch copy (before the step's first kernel)"
                                                          : "batch copy (the next step's, under this one)");
    t.name = g_.intern("host-to-device batch copy");
    batch_copy_ = g_.add(t);
    if (p_.batch_copy_blocking)
      for (StageState& st : stages_) g_.add_dependency(batch_copy_, st.cursor);
  }

  // Copies between host memory and every GPU of `node` (bytes_per_gpu each), after `deps`; one
  // activity over the union of their routes, as build_batch_copy's.
  sim::TaskId add_host_copies(int node, double bytes_per_gpu, bool to_host, const std::vector<sim::TaskId>& deps,
                              const char* name, sim::TrackId track, uint16_t category = kCatOptimizer) {
    if (bytes_per_gpu <= 0) return sim::kNoTask;
    // One node's routes, each direction, worked out once (every gradient bucket copies).
    auto cached = node_copy_links_.find({node, to_host});
    if (cached == node_copy_links_.end()) {
      std::vector<char> on_node(cluster_.num_nodes(), 0);
      on_node[node] = 1;
      cached = node_copy_links_.emplace(std::make_pair(node, to_host), host_copy_links(on_node, to_host)).first;
    }
    sim::TaskSpec t;
    t.activity.work = bytes_per_gpu;
    for (const auto& [l, n] : cached->second)
      t.activity.usages.push_back({link_res_[l], static_cast<double>(n)});
    t.category = category;
    t.track = track;
    t.name = g_.intern(name);
    const sim::TaskId id = g_.add(t);
    for (sim::TaskId d : deps)
      if (d != sim::kNoTask) g_.add_dependency(d, id);
    return id;
  }

  void build_pipeline() {
    const bool zero12_overlapped_gather = p_.zero >= 1 && p_.zero <= 2 && p_.overlap_param_gather && reduces_gradients();
    for (int s = 0; s < p_.pp; ++s) {
      if (zero12_overlapped_gather) {
        // Steady state: the updated parameters are gathered bucket by bucket (the gradient
        // buckets' size, whole layers) in forward order while the first micro-batch runs forward,
        // each layer waiting only for its own bucket (Megatron-Core's overlap_param_gather: a
        // bucket's all-gather is dispatched ahead and its modules' forward pre-hooks wait for it).
        // Routed experts with a data-parallel group of their own are in buffers of their own
        // (Megatron-Core's expert-parallel buffers), bucketed and gathered over that group.
        StageState& st = stages_[s];
        struct Buffer {
          Group group;
          sim::TaskId previous = sim::kNoTask;  // its gathers run one after another
        };
        Buffer dense{Group::DpShard}, experts{Group::ExpertDp};
        auto gather = [&](Buffer& b, double bytes) {
          const sim::TaskId g = add_group_collective(s, b.group, coll::CollectiveOp::AllGather, bytes, {b.previous},
                                                     st.dp_track, kCatDpComm);
          if (g != sim::kNoTask) b.previous = g;
          return g;
        };
        // The gather each layer of [l0, l1) waits for: the buffer's bytes (`field` of each layer,
        // after `leading` bytes) in buckets of dp_bucket_bytes, whole layers, in forward order.
        auto bucketed = [&](Buffer& b, int l0, int l1, double leading, double LayerProgram::*field) {
          std::vector<sim::TaskId> of_layer(l1 - l0, sim::kNoTask);
          double bucket = leading;
          for (int l = l0, first = l0; l < l1; ++l) {
            bucket += p_.layers[l].*field;
            if (bucket < p_.dp_bucket_bytes && l + 1 < l1) continue;
            const sim::TaskId g = gather(b, bucket);
            for (int k = first; k <= l; ++k) of_layer[k - l0] = g;
            bucket = 0;
            first = l + 1;
          }
          return of_layer;
        };
        for (int c = 0; c < chunks(); ++c) {
          const int vs = vstage(c, s);
          const auto [l0, l1] = layer_range(model_stage(vs));
          const bool head = first_position(vs) || last_position(vs);
          const double head_bytes = head ? p_.embedding_param_bytes : 0.0;
          std::vector<sim::TaskId> layers = bucketed(dense, l0, l1, head_bytes, &LayerProgram::param_bytes);
          const std::vector<sim::TaskId> expert_layers = bucketed(experts, l0, l1, 0.0, &LayerProgram::expert_param_bytes);
          for (int k = 0; k < l1 - l0; ++k)
            if (expert_layers[k] != sim::kNoTask) layers[k] = add_join({layers[k], expert_layers[k]});
          // The embedding/output layer travels in the chunk's first bucket (alone if it has no layer).
          st.chunk_head_gather.push_back(!head ? sim::kNoTask : l1 > l0 ? layers.front() : gather(dense, head_bytes));
          st.chunk_layer_gather.push_back(std::move(layers));
        }
      }
      // Items in order. An item marked overlap_next runs beside the next one: both start together
      // once both inputs are in (DualPipe's F&B chunk waits for both receives), share the GPU,
      // and what follows waits for both.
      std::vector<uint64_t> previous;  // the item(s) the next item follows
      sim::TaskId pair_start = sim::kNoTask, pair_first_exit = sim::kNoTask;
      std::vector<uint64_t> pair_keys;
      for (const PipelineItem& it : stage_schedule(schedule_kind(), p_.pp, p_.vp, p_.micro_batches, s, p_.pair_forward_backward)) {
        StageState& st = stages_[s];
        const bool second_of_pair = pair_start != sim::kNoTask;
        if (it.overlap_next) pair_start = st.cursor = add_join({st.cursor});
        st.on_paired_tracks = second_of_pair;  // the trace keeps concurrent slices on their own tracks
        build_item(s, it);
        st.on_paired_tracks = false;
        const uint64_t k = key(it, s);
        if (p_.blocking_p2p)  // only blocking sends need to know what follows an item
          for (uint64_t prev : previous) next_items_[prev].push_back(k);
        if (it.overlap_next) {
          pair_first_exit = st.cursor;
          st.cursor = pair_start;
          pair_keys = {k};
          continue;  // `previous` stays: the pair's second item follows it too
        }
        if (second_of_pair) {
          st.cursor = add_join({pair_first_exit, st.cursor});
          pair_keys.push_back(k);
          for (uint64_t pk : pair_keys) item_entry_[pk] = pair_start;  // inputs gate both
          pair_start = sim::kNoTask;
          previous = pair_keys;
        } else {
          previous = {k};
        }
      }
    }
    // Activations forward and gradients backward between consecutive positions of each
    // micro-batch's pipeline.
    for (int mb = 0; mb < p_.micro_batches; ++mb) {
      const int dir = dualpipe() && mb >= p_.micro_batches / 2 ? 1 : 0;
      const int begin = dir * p_.pp, end = dualpipe() ? begin + p_.pp : positions();
      for (int vs = begin; vs < end; ++vs) {
        if (vs > begin) link_stages(mb, vs - 1, vs, false);
        if (vs < end - 1) link_stages(mb, vs + 1, vs, true);
      }
    }
  }

  void link_stages(int mb, int from_vs, int to_vs, bool backward) {
    const int from_s = rank_of_position(from_vs), to_s = rank_of_position(to_vs);
    const sim::TaskId produced = item_exit_.at(key(mb, from_vs, backward));
    const sim::TaskId consumer = item_entry_.at(key(mb, to_vs, backward));
    if (from_s == to_s || p_.p2p_bytes <= 0) {
      g_.add_dependency(produced, consumer);
      return;
    }
    const sim::TaskId first = static_cast<sim::TaskId>(g_.size());
    std::vector<sim::TaskId> exits;
    for (int t = 0; t < p_.tp; ++t)
      for (int c = 0; c < p_.cp; ++c) {
        coll::Collective x;
        x.op = coll::CollectiveOp::SendRecv;
        const int src = global_rank(p_, t, c, 0, from_s), dst = global_rank(p_, t, c, 0, to_s);
        x.ranks = {src, dst};
        x.peer = dst;
        x.bytes = p_.p2p_bytes;
        exits.push_back(coll::append_collective(g_, cluster_, link_res_, tuning_, x, {produced},
                                                kCatPpComm, stages_[to_s].pp_track, collective_cache_));
      }
    const sim::TaskId sent = exits.size() == 1 ? exits.front() : add_join(exits);
    spans_.push_back({to_s, kCatPpComm, first, sent});
    // Scattered slices are gathered by the receiving stage before it uses them.
    const sim::TaskId gathered =
        p_.p2p_gather_bytes > 0 ? add_group_collective(to_s, Group::TP, coll::CollectiveOp::AllGather, p_.p2p_gather_bytes,
                                                       {sent}, stages_[to_s].pp_track, kCatPpComm)
                                : sim::kNoTask;
    g_.add_dependency(gathered != sim::kNoTask ? gathered : sent, consumer);
    // Megatron's blocking p2p (batch_isend_irecv, then wait): the sender's next item starts only
    // once the send is through.
    if (p_.blocking_p2p) {
      const auto next = next_items_.find(key(mb, from_vs, backward));
      if (next != next_items_.end()) {
        for (uint64_t k : next->second) g_.add_dependency(sent, item_entry_.at(k));
        spans_.push_back({from_s, kCatPpComm, first, sent});
      }
    }
  }

  std::pair<int, int> layer_range(int vs) const {
    if (!p_.vstage_begin.empty()) return {p_.vstage_begin[vs], p_.vstage_begin[vs + 1]};
    const int per = static_cast<int>(p_.layers.size()) / (p_.pp * p_.vp);
    return {vs * per, (vs + 1) * per};
  }

  double chunk_param_bytes(int s, int chunk) const {
    const int vs = vstage(chunk, s);
    const auto [l0, l1] = layer_range(model_stage(vs));
    double b = 0;
    for (int l = l0; l < l1; ++l) b += p_.layers[l].param_bytes;
    if (first_position(vs) || last_position(vs)) b += p_.embedding_param_bytes;
    return b;
  }

  double chunk_expert_param_bytes(int s, int chunk) const {
    const auto [l0, l1] = layer_range(model_stage(vstage(chunk, s)));
    double b = 0;
    for (int l = l0; l < l1; ++l) b += p_.layers[l].expert_param_bytes;
    return b;
  }

  void build_tail() {
    std::vector<sim::TaskId> ends;
    for (int s = 0; s < p_.pp; ++s) {
      StageState& st = stages_[s];
      std::vector<sim::TaskId> before_optimizer{st.cursor, st.rs_cursor, st.ag_cursor};
      // ZeRO-Offload: each reduced bucket's shard to the host as it completes.
      const int node = cluster_.node_of_gpu(st.rep);
      const sim::TrackId host_track = p_.offload_optimizer ? g_.add_track("host", "optimizer offload (stage " +
                                                                                      std::to_string(s) + ")")
                                                           : sim::kNoTrack;
      // The host phase so far: ZeRO-3's per-layer gradient copies (build_item), then the buckets'.
      std::vector<sim::TaskId>& host_phase = offload_tasks_[s];
      const auto offload_bucket = [&](sim::TaskId reduced, double bytes, Group g) {
        if (!p_.offload_optimizer || reduced == sim::kNoTask) return;
        host_phase.push_back(add_host_copies(node, bytes / group_size(g) * p_.offload_d2h_per_grad_byte, true,
                                             {reduced}, "gradient shard to host", host_track));
      };
      if (p_.zero < 3 && reduces_gradients()) {
        // Gradient buckets in backward order, each reduced once its last gradient is ready; the
        // routed experts' buffers over their own group, on their own communicator's stream.
        double bucket = 0, expert_bucket = 0;
        for (size_t i = 0; i < st.grads_ready.size(); ++i) {
          bucket += st.grads_ready[i].bytes;
          expert_bucket += st.grads_ready[i].expert_bytes;
          const sim::TaskId ready = p_.overlap_grad_reduce ? st.grads_ready[i].task : st.cursor;
          const bool last = i + 1 == st.grads_ready.size();
          if (bucket >= p_.dp_bucket_bytes || last) {
            const sim::TaskId e =
                p_.zero == 0 ? add_group_collective(s, Group::DP, coll::CollectiveOp::AllReduce, bucket,
                                                    {st.dp_cursor, ready}, st.dp_track, kCatDpComm)
                             : reduce_scatter_gradients(s, bucket, {st.dp_cursor, ready});
            if (e != sim::kNoTask) st.dp_cursor = e;
            offload_bucket(e, bucket, Group::DpShard);
            bucket = 0;
          }
          if (expert_bucket >= p_.dp_bucket_bytes || (last && expert_bucket > 0)) {
            const sim::TaskId e = add_group_collective(
                s, Group::ExpertDp, p_.zero == 0 ? coll::CollectiveOp::AllReduce : coll::CollectiveOp::ReduceScatter,
                expert_bucket, {st.edp_cursor, ready}, st.dp_track, kCatDpComm);
            if (e != sim::kNoTask) st.edp_cursor = e;
            offload_bucket(e, expert_bucket, Group::ExpertDp);
            expert_bucket = 0;
          }
        }
        before_optimizer.push_back(st.dp_cursor);
        before_optimizer.push_back(st.edp_cursor);
      }
      st.cursor = add_join(before_optimizer);
      run_ops(s, p_.optimizer);
      if (p_.offload_optimizer) {
        // Adam on the host over the shards of every rank on the node (DRAM-bound, shared), then
        // this rank's 16-bit shard back to the GPU (offloaded parameters stay on the host).
        double shard16 = 0;  // this rank's 16-bit parameter shard, dense and expert
        for (int c = 0; c < chunks(); ++c)
          shard16 += chunk_param_bytes(s, c) / group_size(Group::DpShard) +
                     chunk_expert_param_bytes(s, c) / std::max(1, group_size(Group::ExpertDp));
        if (host_phase.empty())  // nothing reduced (one data-parallel rank): the whole gradient, in fp32
          host_phase.push_back(add_host_copies(node, 2.0 * shard16, true, {st.cursor}, "gradients to host", host_track));
        int node_gpus = 0;
        for (int r = 0; r < cluster_.num_gpus(); ++r) node_gpus += cluster_.node_of_gpu(r) == node;
        sim::TaskSpec adam;
        adam.activity.work = node_gpus * shard16 / 2.0 * p_.offload_host_bytes_per_param;
        adam.activity.bound = p_.host_memory_Bps;
        adam.category = kCatOptimizer;
        adam.track = host_track;
        adam.name = g_.intern("host Adam (CPU, the node's shards)");
        const sim::TaskId step = g_.add(adam);
        for (sim::TaskId d : host_phase) g_.add_dependency(d, step);
        g_.add_dependency(st.cursor, step);
        host_phase.push_back(step);
        st.cursor = step;
        if (!p_.offload_params) {
          st.cursor = add_host_copies(node, shard16, false, {step}, "updated 16-bit shard to GPU", host_track);
          host_phase.push_back(st.cursor);
        }
      }
      if (p_.zero >= 1 && p_.zero <= 2 && reduces_gradients() && !p_.overlap_param_gather) {
        double bytes = 0, expert_bytes = 0;
        for (int c = 0; c < chunks(); ++c) {
          bytes += chunk_param_bytes(s, c);
          expert_bytes += chunk_expert_param_bytes(s, c);
        }
        const sim::TaskId e = add_group_collective(s, Group::DpShard, coll::CollectiveOp::AllGather, bytes,
                                                   {st.cursor}, st.dp_track, kCatDpComm);
        const sim::TaskId expert_e = add_group_collective(s, Group::ExpertDp, coll::CollectiveOp::AllGather,
                                                          expert_bytes, {st.cursor}, st.dp_track, kCatDpComm);
        st.cursor = add_join({st.cursor, e, expert_e});
      }
      ends.push_back(st.cursor);
      stage_end_.push_back(st.cursor);
    }
    if (batch_copy_ != sim::kNoTask) ends.push_back(batch_copy_);
    add_join(ends);
  }

  static double idle_s(const std::vector<double>& breakdown) {
    return breakdown[kCatPipelineBubble] + breakdown[kCatIdle];
  }

  // Where the critical stage's representative GPU spends the step: compute by class, then
  // communication it waits for (not hidden under compute) by kind, then idle time (the pipeline
  // bubble when pp > 1). Sums to the step time by construction.
  std::vector<double> breakdown(const sim::ExecutionResult& r, int s) const {
    std::vector<double> out(kNumCategories, 0.0);
    struct Edge { int64_t t; int delta; uint16_t cat; bool compute; };
    std::vector<Edge> edges;
    // Compute tasks are split into their parts' categories in proportion to the parts' times (a
    // task slowed by sharing its GPU stretches every part alike).
    for (size_t id = 0; id < task_stage_.size(); ++id) {
      if (task_stage_[id] != s) continue;
      if (r.end[id] <= r.start[id]) continue;
      const auto [p0, np] = task_parts_[id];
      double nominal = 0;
      for (uint32_t k = p0; k < p0 + np; ++k) nominal += parts_[k].second;
      int64_t t = r.start[id].ps();
      const int64_t span = (r.end[id] - r.start[id]).ps();
      int64_t used = 0;
      for (uint32_t k = p0; k < p0 + np; ++k) {
        const int64_t d = k + 1 == p0 + np ? span - used
                                           : static_cast<int64_t>(span * (nominal > 0 ? parts_[k].second / nominal : 0.0));
        if (d <= 0) continue;
        edges.push_back({t, +1, parts_[k].first, true});
        edges.push_back({t + d, -1, parts_[k].first, true});
        t += d;
        used += d;
      }
    }
    // The GPU waiting for its kernels' launches: from the end of its previous work (or the
    // launches' start, if later) to the launches' end, where they were what it waited for.
    for (const LaunchWait& w : launch_waits_) {
      if (w.stage != s || r.start[w.gpu] > r.end[w.host]) continue;
      const int64_t begin = std::max(r.start[w.host].ps(), w.previous == sim::kNoTask ? 0 : r.end[w.previous].ps());
      if (r.end[w.host].ps() <= begin) continue;
      edges.push_back({begin, +1, kCatHostLaunch, false});
      edges.push_back({r.end[w.host].ps(), -1, kCatHostLaunch, false});
    }
    for (const CommSpan& sp : spans_) {
      if (sp.stage != s) continue;
      int64_t begin = r.end[sp.exit].ps();
      for (sim::TaskId t = sp.first; t <= sp.exit; ++t) begin = std::min(begin, r.start[t].ps());
      if (r.end[sp.exit].ps() <= begin) continue;
      edges.push_back({begin, +1, sp.category, false});
      edges.push_back({r.end[sp.exit].ps(), -1, sp.category, false});
    }
    // Host-side work the GPU may wait on, where it has nothing to run: the offloaded optimizer's
    // phase (copies and the host's Adam), offloaded parameter shards (the first leg of their
    // gathers) and offloaded activations.
    const auto waits_on = [&](const std::vector<sim::TaskId>& tasks, uint16_t category) {
      for (sim::TaskId t : tasks)
        if (t != sim::kNoTask && r.end[t] > r.start[t]) {
          edges.push_back({r.start[t].ps(), +1, category, false});
          edges.push_back({r.end[t].ps(), -1, category, false});
        }
    };
    waits_on(offload_tasks_[s], kCatOptimizer);
    waits_on(param_copies_[s], kCatDpComm);
    waits_on(activation_copies_[s], kCatOffload);
    // The batch copy: a pageable one holds the stage from its start; a pinned one only where it
    // outlasts the stage's own work.
    if (batch_copy_ != sim::kNoTask) {
      const int64_t begin = p_.batch_copy_blocking ? r.start[batch_copy_].ps()
                                                   : std::max(r.start[batch_copy_].ps(), r.end[stage_end_[s]].ps());
      if (r.end[batch_copy_].ps() > begin) {
        edges.push_back({begin, +1, kCatDataWait, false});
        edges.push_back({r.end[batch_copy_].ps(), -1, kCatDataWait, false});
      }
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
      if (a.t != b.t) return a.t < b.t;
      return a.delta < b.delta;  // ends before starts at the same instant
    });
    std::array<int, kNumCategories> compute_active{}, comm_active{};
    int running = 0;  // compute parts active now (the sum of compute_active)
    static constexpr std::array<uint16_t, 9> kCommPriority = {kCatTpComm,   kCatEpComm,    kCatCpComm,
                                                              kCatPpComm,   kCatDpComm,    kCatHostLaunch,
                                                              kCatOffload,  kCatDataWait,  kCatOptimizer};
    int64_t prev = 0;
    const int64_t end = r.makespan.ps();
    size_t i = 0;
    auto attribute = [&](int64_t a, int64_t b) {
      if (b <= a) return;
      const double dt = static_cast<double>(b - a) * 1e-12;
      // Concurrent compute (DualPipe's F&B pairs share the GPU) splits the interval evenly
      // among the running parts; one part alone takes all of it.
      if (running == 1) {
        for (uint16_t c = 0;; ++c)
          if (compute_active[c] > 0) { out[c] += dt; return; }
      }
      if (running > 1) {
        for (uint16_t c = 0; c < kNumCategories; ++c) out[c] += dt * compute_active[c] / running;
        return;
      }
      for (uint16_t c : kCommPriority)
        if (comm_active[c] > 0) { out[c] += dt; return; }
      out[p_.pp > 1 ? kCatPipelineBubble : kCatIdle] += dt;
    };
    while (i < edges.size()) {
      const int64_t t = edges[i].t;
      attribute(prev, std::min(t, end));
      prev = std::max(prev, std::min(t, end));
      for (; i < edges.size() && edges[i].t == t; ++i) {
        (edges[i].compute ? compute_active : comm_active)[edges[i].cat] += edges[i].delta;
        if (edges[i].compute) running += edges[i].delta;
      }
    }
    attribute(prev, end);
    return out;
  }

  const StepProgram& p_;
  const topo::Cluster& cluster_;
  const coll::CommTuning& tuning_;
  sim::Engine engine_;
  sim::TaskGraph g_;
  std::vector<sim::ResourceId> link_res_;
  std::vector<sim::ResourceId> gpu_res_;
  std::vector<StageState> stages_;
  std::vector<int> task_stage_;
  std::vector<std::pair<uint32_t, uint32_t>> task_parts_;   // (first part, count) per task
  std::vector<std::pair<uint16_t, double>> parts_;          // (category, nominal seconds)
  std::vector<CommSpan> spans_;
  struct LaunchWait {
    int stage;
    sim::TaskId host, gpu, previous;
  };
  std::vector<LaunchWait> launch_waits_;
  bool launches_free_ = false;  // host_stays_ahead: only each stage's first launch is charged
  sim::TaskId batch_copy_ = sim::kNoTask;  // build_batch_copy
  // Per stage: ZeRO-Offload's host phase (gradient copies, the host's Adam, the copy back).
  std::vector<std::vector<sim::TaskId>> offload_tasks_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  // Activation offloading: each forward item's copies to the host, per layer (by item key), and
  // per stage every copy either way (the GPU waits on them only where a backward needs one).
  std::unordered_map<uint64_t, std::vector<sim::TaskId>> offloaded_;
  std::vector<std::vector<sim::TaskId>> activation_copies_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  // Offloaded parameters: each shard's copy from the host before its gather, per stage.
  std::vector<std::vector<sim::TaskId>> param_copies_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  std::map<std::pair<int, bool>, std::map<topo::LinkId, int>> node_copy_links_;  // add_host_copies' routes
  std::vector<sim::TaskId> stage_end_;     // per stage: its last task before the step's end
  std::map<uint64_t, sim::TaskId> item_entry_, item_exit_;
  std::map<uint64_t, std::vector<uint64_t>> next_items_;  // item -> the item(s) after it on its stage
  std::map<const std::vector<CostedOp>*, std::pair<std::vector<CostedOp>, std::vector<CostedOp>>> split_cache_;
  std::map<std::tuple<int, double, std::vector<int>>, double> estimates_;
  coll::CollectiveCache collective_cache_;
};

}  // namespace

const char* category_name(uint16_t c) {
  return c < kCategoryNames.size() ? kCategoryNames[c].c_str() : "unknown";
}
const std::vector<std::string>& category_names() { return kCategoryNames; }

int group_size(const StepProgram& p, Group g) {
  if (g == Group::ExpertDp) return (p.experts_folded ? p.tp * p.cp * p.dp : p.cp * p.dp) / p.ep;
  return g == Group::TP ? p.tp : g == Group::CP ? p.cp : g == Group::EP ? p.ep : p.dp * p.cp;
}

int global_rank(const StepProgram& p, int tp_i, int cp_i, int dp_i, int pp_i) {
  return tp_i + p.tp * (cp_i + p.cp * (dp_i + p.dp * pp_i));
}

namespace {
int expert_index_width(const StepProgram& p) { return p.experts_folded ? p.tp * p.cp : p.cp; }
}  // namespace

int expert_span(const StepProgram& p) { return (expert_index_width(p) + p.ep - 1) / p.ep * p.ep; }
int expert_replicas(const StepProgram& p) {
  return (expert_span(p) + expert_index_width(p) - 1) / expert_index_width(p);
}

ReplayResult replay_step_bounded(const StepProgram& program, const topo::Cluster& cluster,
                                 const coll::CommTuning& tuning, const ReplayOptions& options,
                                 int max_micro_batches, bool* extrapolated) {
  // Both depths well past the fill (interleaved schedules with blocking sends settle after about
  // 4 pp micro-batches): m2 at least 8 rounds of pp, m1 four rounds shorter.
  const int round = std::max(1, program.pp);
  const int m2 = std::max(max_micro_batches / round, 8) * round, m1 = m2 - 4 * round;
  // A trace holds every task of the step: a step of thousands of micro-batches would grow it (and
  // the replay, which cannot extrapolate then) to gigabytes.
  if (!options.trace_path.empty() && program.micro_batches > kMaxTracedMicroBatches)
    throw config::InputError(options.trace_path, 0, "--trace",
                             "the step has " + std::to_string(program.micro_batches) +
                                 " micro-batches per rank; a trace replays each of them, at most " +
                                 std::to_string(kMaxTracedMicroBatches),
                             "trace a shorter step (e.g. --set parallelism.global_batch with fewer micro-batches), "
                             "or run without --trace");
  *extrapolated = program.micro_batches > m2 && options.trace_path.empty();
  if (!*extrapolated) return replay_step(program, cluster, tuning, options);
  StepProgram shorter = program;
  shorter.micro_batches = m1;
  const ReplayResult a = replay_step(shorter, cluster, tuning, options);
  shorter.micro_batches = m2;
  ReplayResult b = replay_step(shorter, cluster, tuning, options);
  const double k = static_cast<double>(program.micro_batches - m2) / (m2 - m1);
  b.step_time_s += k * (b.step_time_s - a.step_time_s);
  for (size_t c = 0; c < b.breakdown_s.size(); ++c) b.breakdown_s[c] += k * (b.breakdown_s[c] - a.breakdown_s[c]);
  return b;
}

ReplayResult replay_step(const StepProgram& program, const topo::Cluster& cluster,
                         const coll::CommTuning& tuning, const ReplayOptions& options) {
  const int gpus = program.tp * program.cp * program.dp * program.pp;
  if (gpus > cluster.num_gpus())
    throw std::invalid_argument("replay: the plan needs " + std::to_string(gpus) +
                                " GPUs but the cluster has " + std::to_string(cluster.num_gpus()));
  const size_t V = static_cast<size_t>(program.pp * program.vp);
  if (program.vstage_begin.empty() ? program.layers.size() % V != 0
                                   : program.vstage_begin.size() != V + 1 ||
                                         program.vstage_begin.back() != static_cast<int>(program.layers.size()))
    throw std::invalid_argument("replay: the layers do not split over pp*vp virtual stages");
  StepBuilder b(program, cluster, tuning);
  return b.run(options);
}

}  // namespace stacksim::workload
