// The replay's step builder, shared by the files that build its parts (one concern each):
// replay.cpp (set-up and run), replay_tasks.cpp (compute, host launches, host copies),
// replay_comm.cpp (collectives and their groups), replay_pipeline.cpp (the schedule's items and
// the stages' links), replay_tail.cpp (the step's data-parallel tail and the breakdown).
// Internal to models/workload: include replay.hpp, not this.
#pragma once
#include "models/workload/replay.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "models/workload/pipeline_schedule.hpp"
#include "sim/trace.hpp"

namespace stacksim::workload::replay_detail {

extern const std::vector<std::string> kCategoryNames;
uint16_t comm_category(Group g);

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
  StepBuilder(const StepProgram& p, const topo::Cluster& cluster, const coll::CommTuning& tuning);

  ReplayResult run(const ReplayOptions& options);

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

  sim::TaskId add_join(const std::vector<sim::TaskId>& deps, sim::TrackId track = sim::kNoTrack);

  // A kernel of `seconds` (on a whole GPU) on stage s's reduction stream: it holds the GPU like
  // compute does, so compute running meanwhile shares the GPU with it (max-min).
  sim::TaskId side_stream_kernel(int s, const char* name, double seconds, const std::vector<sim::TaskId>& deps);

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
  Launches host_launch(int s, int launches, bool sync);

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
  bool host_stays_ahead() const;

  // GPU work `gpu` (on stage s, after `previous`) waiting for launches `host`: kept for the
  // breakdown, which counts the wait as host_launch time.
  void wait_for_launch(int s, sim::TaskId host, sim::TaskId gpu, sim::TaskId previous);

  // One task for a run of consecutive compute ops (a kernel sequence on the stream): the replay
  // cost is per task, and nothing can interleave with the ops of one stream anyway. The parts are
  // kept for the breakdown.
  sim::TaskId add_compute(int s, const CostedOp* first, const CostedOp* last);

  int group_size(Group g) const { return workload::group_size(p_, g); }

  // Ranks of every group of kind `g` that the ranks of stage s (data-parallel replica 0 for
  // TP/CP; all replicas for DP/EP) belong to.
  std::vector<std::vector<int>> groups(Group g, int s) const;

  // Appends the collective `op` on every group of kind `g` of stage s, all starting after `deps`.
  // Returns a task that completes when all of them have (or kNoTask if the groups are trivial).
  sim::TaskId add_group_collective(int s, Group g, coll::CollectiveOp op, double bytes,
                                   const std::vector<sim::TaskId>& deps, sim::TrackId track, uint16_t category,
                                   const coll::MoeDispatch& dispatch = {});

  void run_collective_op(int s, const CostedOp& op, std::vector<sim::TaskId>& pending_overlap);

  void run_ops(int s, const std::vector<CostedOp>& ops);

  int shard_ranks() const { return p_.shard_size > 0 ? p_.shard_size : p_.dp * p_.cp; }

  // Whether any rank shares its weights with another: data and context parallelism (Megatron's
  // data-parallel-with-context-parallel group; torchtitan's FSDP over dp x cp), or the routed
  // experts' own data-parallel group.
  bool reduces_gradients() const { return p_.dp * p_.cp > 1 || group_size(Group::ExpertDp) > 1; }

  // Gradients of `bytes` to their ZeRO/FSDP owners: reduce-scattered over the shard group, then
  // (hybrid sharding) each shard all-reduced over its replicas. Returns the last task.
  sim::TaskId reduce_scatter_gradients(int s, double bytes, const std::vector<sim::TaskId>& deps);

  // FSDP: gather one layer's parameters on the all-gather stream, at most two layers ahead of
  // the compute that needs them (PyTorch FSDP's forward/backward prefetch of one unit); routed
  // experts sharded over their own group are gathered there next.
  sim::TaskId fsdp_gather(int s, const LayerProgram& layer, sim::TaskId limiter);

  void build_item(int s, const PipelineItem& it);

  // Which ops of a backward list an item runs: all, the input-gradient part (every op but the
  // wgrads) or the weight part (the wgrads alone).
  enum class Part { Both, Input, Weight };
  const std::vector<CostedOp>& backward_part(const std::vector<CostedOp>& ops, Part part);

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
  int vstage(int chunk, int s) const {
    return dualpipe() ? (chunk == 0 ? s : 2 * p_.pp - 1 - s) : virtual_stage(chunk, s, p_.pp);
  }
  int model_stage(int vs) const { return dualpipe() ? vs % p_.pp : vs; }
  int rank_of_position(int vs) const { return dualpipe() ? (vs < p_.pp ? vs : 2 * p_.pp - 1 - vs) : vs % p_.pp; }
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
  void build_batch_copy();

  // Copies between host memory and every GPU of stage s on its representative's node (bytes_per_gpu
  // each), after `deps`; one activity over the union of their routes (host_copies.hpp), as
  // build_batch_copy's.
  sim::TaskId add_host_copies(int s, double bytes_per_gpu, bool to_host, const std::vector<sim::TaskId>& deps,
                              const char* name, sim::TrackId track, uint16_t category = kCatOptimizer);

  void build_pipeline();

  void link_stages(int mb, int from_vs, int to_vs, bool backward);

  std::pair<int, int> layer_range(int vs) const;

  double chunk_param_bytes(int s, int chunk) const;

  double chunk_expert_param_bytes(int s, int chunk) const;

  void build_tail();

  static double idle_s(const std::vector<double>& breakdown) {
    return breakdown[kCatPipelineBubble] + breakdown[kCatIdle];
  }

  // Where the critical stage's representative GPU spends the step: compute by class, then
  // communication it waits for (not hidden under compute) by kind, then idle time (the pipeline
  // bubble when pp > 1). Sums to the step time by construction.
  std::vector<double> breakdown(const sim::ExecutionResult& r, int s) const;

  const StepProgram& p_;
  const topo::Cluster& cluster_;
  const coll::CommTuning& tuning_;
  sim::Engine engine_;
  sim::TaskGraph g_;
  std::vector<sim::ResourceId> link_res_;
  std::vector<sim::ResourceId> gpu_res_;
  std::vector<StageState> stages_;
  std::vector<int> task_stage_;
  std::vector<std::pair<uint32_t, uint32_t>> task_parts_;  // (first part, count) per task
  std::vector<std::pair<uint16_t, double>> parts_;         // (category, nominal seconds)
  std::vector<CommSpan> spans_;
  struct LaunchWait {
    int stage;
    sim::TaskId host, gpu, previous;
  };
  std::vector<LaunchWait> launch_waits_;
  bool launches_free_ = false;             // host_stays_ahead: only each stage's first launch is charged
  sim::TaskId batch_copy_ = sim::kNoTask;  // build_batch_copy
  // Per stage: ZeRO-Offload's host phase (gradient copies, the host's Adam, the copy back).
  std::vector<std::vector<sim::TaskId>> offload_tasks_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  // Activation offloading: each forward item's copies to the host, per layer (by item key), and
  // per stage every copy either way (the GPU waits on them only where a backward needs one).
  std::unordered_map<uint64_t, std::vector<sim::TaskId>> offloaded_;
  std::vector<std::vector<sim::TaskId>> activation_copies_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  // Offloaded parameters: each shard's copy from the host before its gather, per stage.
  std::vector<std::vector<sim::TaskId>> param_copies_ = std::vector<std::vector<sim::TaskId>>(p_.pp);
  std::map<std::pair<int, bool>, std::map<topo::LinkId, int>> stage_copy_links_;  // add_host_copies' routes
  std::vector<sim::TaskId> stage_end_;  // per stage: its last task before the step's end
  std::map<uint64_t, sim::TaskId> item_entry_, item_exit_;
  std::map<uint64_t, std::vector<uint64_t>> next_items_;  // item -> the item(s) after it on its stage
  std::map<const std::vector<CostedOp>*, std::pair<std::vector<CostedOp>, std::vector<CostedOp>>> split_cache_;
  std::map<std::tuple<int, double, std::vector<int>>, double> estimates_;
  coll::CollectiveCache collective_cache_;
};

}  // namespace stacksim::workload::replay_detail
