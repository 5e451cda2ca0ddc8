// Replays one training step of a parallel plan as per-rank task graphs on the engine.
//
// What is simulated (DESIGN.md "workload replay"):
//  - Pipeline stages run their schedule (GPipe / 1F1B / interleaved / DualPipe) as an in-order
//    sequence of tasks per stage (DualPipe's F&B pairs as two chains sharing the GPU);
//    activations and gradients cross stages as flows on the real links.
//  - Tensor/context/expert-parallel collectives sit in the stage's program order (Megatron runs
//    them synchronously); the context-parallel ring exchange (cp_comm p2p) runs under the
//    attention forward and backward.
//  - Data-parallel gradient reduction (all-reduce, or reduce-scatter with a distributed optimizer)
//    runs in buckets on a separate stream as soon as the last micro-batch's backward of the
//    bucket's layers is done; ZeRO-1/2 gather updated parameters after the optimizer, or with
//    overlap_param_gather bucket by bucket under the next step's first forward, each layer waiting
//    for its own bucket; ZeRO-3/FSDP gathers each layer's parameters before its forward and
//    backward and reduce-scatters its gradients per micro-batch, or, under a pipeline, once per
//    step (torchtitan's FSDP2 with pipelining); FSDP's element-wise passes (the gradient cast or
//    copy before each reduce-scatter on the reduction stream, FSDP 2's copy-out after each gather
//    on the compute stream) hold the GPU like compute.
//  - Communication kernels occupy SMs: a running collective takes a share of its GPUs' compute
//    resource, slowing overlapped compute (see the collective tuning's sm_fraction).
//  - The batch's host-to-device copy shares the PCIe tree with the GPUs' NIC traffic and their
//    neighbours' copies (StepProgram::batch_copy_bytes).
// Symmetry (exact, never at the cost of shared links): every data-parallel replica and every rank
// of a tensor/context group runs the same program, so compute is simulated for one representative
// rank per pipeline stage, while every flow of every collective the stage's ranks take part in
// (including the data-parallel groups spanning all replicas) is simulated on the links.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/workload/pipeline_schedule.hpp"
#include "sim/task_graph.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::workload {

// Breakdown categories (seconds of the critical rank's step).
enum Category : uint16_t {
  kCatGemm,
  kCatAttention,
  kCatElementwise,
  kCatOptimizer,
  kCatTpComm,
  kCatCpComm,
  kCatEpComm,
  kCatPpComm,
  kCatDpComm,
  kCatPipelineBubble,
  kCatDataWait,
  kCatCheckpoint,
  kCatHostLaunch,
  kCatOffload,
  kCatIdle,
  kNumCategories
};
const char* category_name(uint16_t c);
const std::vector<std::string>& category_names();

// DP: all data- and context-parallel ranks of a (tp, pp) position; DpShard / DpReplicate: its
// ZeRO/FSDP shard groups (shard_size consecutive ranks) and the groups of shard peers across them
// (hybrid sharding). ExpertDp: the ranks holding the same routed experts (the expert
// data-parallel group of Megatron-Core and torchtitan: tp*cp*dp over etp*ep), over which those
// experts' gradients and ZeRO/FSDP shards are reduced and gathered.
enum class Group { TP, CP, EP, DP, DpShard, DpReplicate, ExpertDp };

// One op of a rank's program with its cost already computed.
struct CostedOp {
  enum class Kind { Compute, Collective } kind = Kind::Compute;
  std::string name;
  uint16_t category = kCatGemm;  // compute class
  double seconds = 0.0;          // compute: time on a whole GPU
  Group group = Group::TP;       // collective
  coll::CollectiveOp op = coll::CollectiveOp::AllReduce;
  double bytes = 0.0;          // collective: nccl-tests buffer size per rank
  bool overlaps_next = false;  // collective runs concurrently with the next compute op (CP)
  coll::MoeDispatch dispatch;  // all-to-all: MoE dispatch once per destination node (coll::Collective)
  bool weight_grad = false;    // compute: a wgrad GEMM (zero-bubble schedules defer these)
  int launches = 1;            // kernels the host launches for the op (a CUDA graph: one for its
                               // first op, none for the rest; program_builder.cpp)
  bool host_sync = false;      // the host waits for the GPU before launching it (Op::host_sync)
};

// The ops of one layer for one micro-batch on one rank.
struct LayerProgram {
  std::vector<CostedOp> forward;
  std::vector<CostedOp> backward;  // includes recomputed forward ops first, if any
  double param_bytes = 0.0;        // this rank's parameter bytes of the layer (16-bit)
  double grad_bytes = 0.0;         // gradient bytes reduced over DP for the layer
  // Routed experts whose data-parallel group is not DP's (expert parallelism carved out of it):
  // their bytes, not counted above, are gathered and reduced over Group::ExpertDp.
  double expert_param_bytes = 0.0;
  double expert_grad_bytes = 0.0;
  // FSDP (zero 3) element-wise passes (ParallelPlan::fsdp_impl): over the unsharded gradient
  // before its reduce-scatter, on the reduction stream; over the gathered parameters after each
  // all-gather, on the compute stream. Seconds on a whole GPU.
  double fsdp_grad_prep_s = 0.0;
  double fsdp_gather_copy_s = 0.0;
  // Activation offloading (StepProgram::offload_activations): bytes this rank stores for the
  // layer per micro-batch, copied to the host after its forward and back before its backward.
  double offload_bytes = 0.0;
};

struct StepProgram {
  int pp = 1, vp = 1, tp = 1, cp = 1, dp = 1, ep = 1;
  bool experts_folded = false;  // ep groups run along tp, then cp, then dp (etp 1)
  int micro_batches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;  // OneFOneB is interleaved when vp > 1
  bool pair_forward_backward = false;              // 1F1B's steady-state F&B pairs run together (ep_overlap)
  int zero = 0;                                    // 0..3
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = false;
  bool blocking_p2p = false;  // a stage waits for its pipeline sends before its next item
  double dp_bucket_bytes = 40e6;
  int shard_size = 0;                // ZeRO/FSDP shard group over the dp*cp ranks; 0 = all of them
  int fsdp_gathers_per_layer = 1;    // zero 3: a layer's parameters in this many sequential all-gathers
  std::vector<LayerProgram> layers;  // one per model layer, in order
  // Layers of virtual stage v are [vstage_begin[v], vstage_begin[v+1]); empty = an even split.
  std::vector<int> vstage_begin;
  std::vector<CostedOp> pre_forward;    // embedding (first virtual stage)
  std::vector<CostedOp> post_forward;   // logits + loss (last virtual stage)
  std::vector<CostedOp> pre_backward;   // loss + logits backward (last virtual stage)
  std::vector<CostedOp> post_backward;  // embedding backward (first virtual stage)
  double embedding_param_bytes = 0.0;
  double embedding_grad_bytes = 0.0;        // input embedding (first virtual stage)
  double head_grad_bytes = 0.0;             // output layer + final norm (last virtual stage)
  double embedding_fsdp_grad_prep_s = 0.0;  // as LayerProgram::fsdp_grad_prep_s
  double head_fsdp_grad_prep_s = 0.0;
  std::vector<CostedOp> optimizer;  // after gradients are reduced
  double p2p_bytes = 0.0;           // activation bytes one rank sends between stages
  // > 0: the tp ranks send slices (p2p_bytes each) that the receiving stage all-gathers over
  // its tensor-parallel group into this many bytes (ParallelPlan::p2p_scatter_gather).
  double p2p_gather_bytes = 0.0;
  // The next step's batch copied host to device, per GPU (0 = none): over the PCIe route from the
  // GPU's nearest CPU socket, at most batch_copy_Bps per copy. Pinned memory: the copy engine runs
  // it under the step, which cannot end before it does; pageable: a staged copy on the compute
  // stream, which waits for it before its first kernel.
  double batch_copy_bytes = 0.0;
  double batch_copy_Bps = 0.0;
  bool batch_copy_blocking = false;
  // Host time to launch one kernel (the framework's per-op dispatch on the rank's CPU thread);
  // 0 = launches are free (the host is never behind).
  double host_launch_s = 0.0;
  // Host time per step outside kernel launches (the training loop's own Python, the optimizer's
  // bookkeeping, zero_grad), before each stage's first launch: a loop that synchronises once per
  // step (the loss read back) starts it with the GPU idle. 0 = none.
  double host_step_s = 0.0;
  // ZeRO-Offload (ParallelPlan::offload_optimizer): each gradient bucket's reduced shard goes to
  // the host (offload_d2h_per_grad_byte bytes per byte of gradient: fp32 copies), the host runs
  // Adam (offload_host_bytes_per_param of DRAM traffic per parameter, at host_memory_Bps per node,
  // shared by the node's ranks), and the 16-bit shard comes back before the parameter gather.
  bool offload_optimizer = false;
  // Parameter offloading (ParallelPlan::offload_params, zero 3): each gather's shard comes from
  // host memory first, and the host's Adam leaves the updated shard there.
  bool offload_params = false;
  // Activation offloading (ParallelPlan::offload_activations; LayerProgram::offload_bytes).
  bool offload_activations = false;
  double offload_d2h_per_grad_byte = 0.0;
  double offload_host_bytes_per_param = 0.0;
  double host_memory_Bps = 0.0;
};

struct ReplayResult {
  double step_time_s = 0.0;
  std::vector<double> breakdown_s;  // per Category, sums to step_time_s
  int critical_stage = 0;
  size_t tasks = 0;
  sim::EngineStats engine_stats;
};

struct ReplayOptions {
  std::string trace_path;  // write a Chrome trace when not empty
  // Skip the host launch chain where it provably never delays the GPU beyond the first launch
  // (the same step and breakdown; tests turn it off to check that).
  bool host_shortcut = true;
};

// Global rank of (tp, cp, dp, pp) coordinates: Megatron's default order tp-cp-dp-pp.
int global_rank(const StepProgram& p, int tp_i, int cp_i, int dp_i, int pp_i);
// Ranks in one group of a layer collective's kind (TP, CP or EP; data parallelism otherwise).
int group_size(const StepProgram& p, Group g);
// Every group of a kind on pipeline stage `stage`, each in ring order: the tp x cp (data
// parallelism: tp) copies of a layer collective that run at once, as the replay appends them.
std::vector<std::vector<int>> communicator_groups(const StepProgram& p, Group g, int stage);

// Expert groups are ep consecutive ranks along the combined cp x dp index (cp fastest: Megatron-
// Core's expert rank layout since MoE parallel folding, v0.10, with expert TP = tp; before it EP
// came out of dp alone, the same groups when cp = 1); with whole experts (etp 1) along the
// combined tp x cp x dp index, tp fastest. The replay simulates the groups that hold data-parallel
// replica 0: indices [0, expert_span(p)), i.e. ceil(cp / ep) (folded: ceil(tp*cp / ep)) whole groups,
// which span expert_replicas(p) data-parallel replicas.
int expert_span(const StepProgram& p);
int expert_replicas(const StepProgram& p);

ReplayResult replay_step(const StepProgram& program, const topo::Cluster& cluster, const coll::CommTuning& tuning,
                         const ReplayOptions& options);

// The most micro-batches per rank a --trace replays (it cannot extrapolate; InputError past it).
inline constexpr int kMaxTracedMicroBatches = 1024;

// replay_step for steps of many micro-batches in bounded time and memory: with more than
// m2 = max(max_micro_batches, 8 pp) micro-batches (rounded to pp; no trace asked for) it replays
// m2 and m2 - 4 pp and extends step and breakdown along the line through them. Past the
// pipeline's fill, each further round of pp micro-batches repeats the same steady-state period,
// so the line is the replay's own slope; `extrapolated` says whether it was used.
ReplayResult replay_step_bounded(const StepProgram& program, const topo::Cluster& cluster,
                                 const coll::CommTuning& tuning, const ReplayOptions& options, int max_micro_batches,
                                 bool* extrapolated);

}  // namespace stacksim::workload
