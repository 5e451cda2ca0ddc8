// Collectives decomposed into flows on the cluster's links (DESIGN.md "collectives").
//
// A collective becomes one or more phases; a phase is a set of concurrent flows (engine activities
// over gpu_route()s) that all start together after a fixed latency, and the next phase starts when
// every flow of the previous one has finished. Because the flows hold the real links, shared NICs
// and oversubscribed fabrics slow a collective exactly as they slow any other traffic.
//
// Algorithms (plan.hpp has the decompositions and their volumes):
//  - Ring: NCCL's pipelined ring in steady state: every rank sends the phase volume to the next
//    rank. A multi-node ring with g ranks per node runs g channels (one per rail), so every NIC
//    carries one channel and a multi-node ring is NIC-bound as in life.
//  - Tree: NCCL's double binary tree across nodes (each tree carries half the data, split over the
//    rails) with a chain inside each node; all-reduce only. Latency grows with log2(nodes).
//  - Hierarchical: intra-node reduce-scatter, inter-node all-reduce of S/g per rail (ring),
//    intra-node all-gather: three phases.
//  - InSwitch (NVLS, NVSwitch gen3+): each GPU pushes S up to the switch and receives S back.
//  - All-to-all: direct flows inside a node; between nodes one rail-aligned flow per (GPU, node)
//    pair plus the intra-node forwarding of the destination node (NCCL's PXN), so the task count
//    is n x nodes, not n^2. SendRecv: one flow. Broadcast: a ring pipeline from ranks[0].
//
// Timing of one choice (algorithm, protocol), NCCL's tuning model (src/graph/tuning.cc): latency =
// per-call latency + intra-node steps x step latency + inter-node steps x network step latency;
// bandwidth = link rate x protocol efficiency (NIC line rate x network efficiency on NIC-bound
// flows, port rate x NVLS efficiency for in-switch reduction), optionally capped per rank (LL).
// Auto picks, per message size, the (algorithm, protocol) with the lowest analytical estimate
// (link loads / capacities + latency), like NCCL's tuner; the flows then run on the engine.
//
// SM sharing: NCCL's kernels occupy one SM per channel. When the caller passes per-rank GPU
// compute resources, each flow also holds its source GPU's resource with weight
// CommTuning::sm_fraction (shared among the flows that GPU sources in the phase). The flow's rate
// is then normalised to its nominal rate (work = bytes / nominal, link weight = nominal) so that
// max-min compares like with like: a collective overlapped with a compute kernel on the same GPU
// slows it (and is slowed) by about 1/(1 + sm_fraction).
//
// Bus bandwidth as nccl-tests defines it: all-reduce 2(n-1)/n, RS/AG/all-to-all (n-1)/n, others 1.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/task_graph.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::hw {
struct NodeSpec;
struct NicSpec;
}  // namespace stacksim::hw

namespace stacksim::coll {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, SendRecv };

// How an MoE all-to-all's token copies reach their experts (Collective::dispatch).
struct MoeDispatch {
  int top_k = 0;             // > 0: once per destination node (DeepEP); 0: every copy to its rank
  int groups = 0;            // group-limited routing (ModelConfig's moe.groups / groups_per_token):
  int groups_per_token = 0;  // a token's experts lie in groups_per_token of `groups` expert groups
  bool operator==(const MoeDispatch&) const = default;
  auto operator<=>(const MoeDispatch&) const = default;
};
// Expected nodes one token's top_k copies reach, of `nodes` nodes holding the EP group's experts in
// order (experts split evenly, groups contiguous): with group-limited routing, the nodes of its
// groups_per_token groups when the groups split evenly over the nodes; else 1 - (1 - 1/N)^k of them.
double moe_nodes_per_token(const MoeDispatch& d, int nodes);
// InSwitchTree: NCCL's NVLSTree, in-switch reduction inside each node and NCCL's double binary
// tree across nodes, one rail per GPU, pipelined (NCCL 2.18+ on NVSwitch systems).
enum class Algorithm { Auto, Ring, Tree, Hierarchical, InSwitch, InSwitchTree };
const char* op_name(CollectiveOp op);
const char* algorithm_name(Algorithm a);

struct Collective {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::vector<int> ranks;  // global GPU ranks, in ring order
  double bytes = 0;        // nccl-tests convention: S = the buffer size per rank
  Algorithm algorithm = Algorithm::Auto;
  int peer = -1;  // SendRecv destination (ranks = {src, dst})
  // AllToAll as MoE dispatch/combine that crosses nodes once per destination node (DeepEP's
  // NVLink/RDMA forwarding, DeepSeek-V3 section 3.2.2): `bytes` holds top_k copies of each token;
  // a token goes to a remote node once if any of its top_k experts is there and is fanned out over
  // NVLink. top_k 0 = a plain all-to-all (every copy to its rank).
  MoeDispatch dispatch;
};

// One NCCL protocol (LL, LL128, Simple) on one hardware generation.
struct Protocol {
  std::string name;
  double latency_s = 0;               // per collective call
  double bus_cap_Bps = 0;             // cap on the bus bandwidth per rank (0 = none)
  double efficiency = 1;              // fraction of the intra-node link rate reached
  double step_latency_s = 0;          // per algorithm step between GPUs of one node
  double network_step_latency_s = 0;  // per algorithm step that crosses nodes
};

struct CommTuning {
  std::vector<Protocol> protocols{{"Simple", 10e-6, 0, 1.0, 0, 0}};  // candidates for the tuner
  double nvls_efficiency = 0;     // in-switch reduction: algbw / port bandwidth (0 = no NVLS)
  double nvls_latency_s = 0;      // per NVLS call
  double network_efficiency = 1;  // fraction of the NIC line rate reached by NIC-bound flows
  double sm_fraction = 0;         // share of a GPU's SMs a running collective occupies
  // Mid-size ramp of the Simple protocol and NVLS on intra-node links (NCCL adds channels and
  // deepens its pipeline as messages grow): the efficiency is scaled by a fraction that grows
  // linearly in log2(the share of a rank's buffer per peer: S/n for all-reduce, reduce-scatter,
  // all-gather and all-to-all, S otherwise) from ramp_start_fraction at ramp_start_bytes to 1 at
  // ramp_end_bytes (clamped outside). ramp_end_bytes = 0: no ramp.
  double ramp_start_bytes = 0, ramp_end_bytes = 0, ramp_start_fraction = 1;
  std::string intra_generation, nic_generation;
};

// The tuning of a node type and NIC, read from models/collectives/tuning/*.yaml (cached; the
// directory can be moved with STACKSIM_TUNING_DIR). Throws config::InputError if a generation has
// no entry.
CommTuning tuning_for(const hw::NodeSpec& node, const hw::NicSpec& nic);
// The same from an explicit tuning directory and generation keys; `in_switch_reduction` false
// disables NVLS.
CommTuning load_tuning(const std::string& dir, const std::string& intra_generation, const std::string& nic_generation,
                       bool in_switch_reduction);
std::string default_tuning_dir();

double bus_factor(CollectiveOp op, int n);

// The ramp fraction of CommTuning at a per-peer share of `bytes` (1 without a ramp).
double ramp_fraction(const CommTuning& tuning, double bytes);

// Appends the collective's flows to `graph` after `deps`; returns a task that completes when every
// rank has its result. `link_resources` is Cluster::bind's map. `gpu_compute_resources` (per
// global rank, may be null) are the GPUs' compute resources the kernels take SMs from. Tasks get
// `category`; the first flow of each phase gets `track`. Throws std::invalid_argument for a group
// of fewer than 2 ranks, an unknown rank, a negative size or an algorithm the group cannot run.
sim::TaskId append_collective(sim::TaskGraph& graph, const topo::Cluster& cluster,
                              const std::vector<sim::ResourceId>& link_resources, const CommTuning& tuning,
                              const Collective& c, const std::vector<sim::TaskId>& deps, uint16_t category,
                              sim::TrackId track, const std::vector<sim::ResourceId>* gpu_compute_resources);

struct CollectiveTiming {
  double seconds = 0, algbw_Bps = 0, busbw_Bps = 0;
  Algorithm algorithm = Algorithm::Ring;  // the algorithm used (Auto resolved)
  std::string protocol;
  double estimate_s = 0;  // the tuner's analytical estimate of the choice
};

// The tuner's analytical time of the collective alone (the Auto choice, or the requested
// algorithm), without running the engine: latency terms plus each phase's most loaded link.
// Memoises, per collective shape (op, algorithm, ranks, bytes, peer, dedup), the chain of activities a
// collective becomes, for ONE cluster, tuning and link map: the replay appends the same
// collectives every micro-batch. Only used when no GPU compute resources are passed.
struct CollectiveCache {
  std::map<std::tuple<int, int, int, MoeDispatch, double, std::vector<int>>, std::vector<sim::TaskSpec>> chains;
};
sim::TaskId append_collective(sim::TaskGraph& graph, const topo::Cluster& cluster,
                              const std::vector<sim::ResourceId>& link_resources, const CommTuning& tuning,
                              const Collective& c, const std::vector<sim::TaskId>& deps, uint16_t category,
                              sim::TrackId track, CollectiveCache& cache);

double estimate_seconds(const topo::Cluster& cluster, const CommTuning& tuning, const Collective& c);
// The same for collectives of one shape on different groups started together (the tp x cp copies
// of a data-parallel reduction): each runs the plan the tuner picks for it alone, and a phase's
// flows of all of them share the links they cross, so the most loaded link paces the phase.
// Equals estimate_seconds for groups whose routes are disjoint.
double estimate_concurrent_seconds(const topo::Cluster& cluster, const CommTuning& tuning,
                                   const std::vector<Collective>& collectives);

// One collective alone on a fresh engine (nccl-tests style).
CollectiveTiming time_collective(const topo::Cluster& cluster, const CommTuning& tuning, const Collective& c);

}  // namespace stacksim::coll
