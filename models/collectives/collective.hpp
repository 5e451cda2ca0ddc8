// Collectives decomposed into flows on the cluster's links (DESIGN.md "collectives").
//
// Algorithms:
//  - Ring: every rank sends to the next one in the group's order. A single-node (or one rank per
//    node) ring is n concurrent flows i -> i+1 carrying the whole phase volume each (NCCL's
//    pipelined ring in steady state). A multi-node ring with several ranks per node runs one
//    channel per local rank (NCCL's channels, one per rail): channel c leaves a node from local
//    rank c-1 and enters the next node at local rank c, so every NIC carries one channel; the
//    intra-node hops of all channels merge into one flow per GPU pair.
//  - Hierarchical: intra-node reduce-scatter, inter-node all-reduce of 1/g of the data per rail,
//    intra-node all-gather (three phases of flows).
//  - InSwitch (NVLS, NVSwitch gen3+): each GPU pushes S up to the switch and receives S back; the
//    switch reduces (all-reduce within one node).
//  - All-to-all: one flow per ordered pair; SendRecv: one flow; Broadcast: a ring pipeline.
// Protocols: NCCL picks LL, LL128 or Simple by size; each has a start-up latency and a bandwidth
// cap (LL, LL128) or an efficiency on the links (Simple). The tuning tables hold one set per
// hardware generation (models/collectives/tuning.cpp, with their sources); the protocol with the
// lowest predicted time is used, and its flows then share the real links with everything else.
// Bus bandwidth as nccl-tests defines it: all-reduce 2(n-1)/n, RS/AG/all-to-all (n-1)/n, others 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/task_graph.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::hw {
struct NodeSpec;
struct NicSpec;
}  // namespace stacksim::hw

namespace stacksim::coll {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, SendRecv };
enum class Algorithm { Auto, Ring, Tree, Hierarchical, InSwitch };
const char* op_name(CollectiveOp op);
const char* algorithm_name(Algorithm a);

struct Collective {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::vector<int> ranks;       // global GPU ranks, in ring order
  double bytes = 0;             // nccl-tests convention: S = the buffer size per rank
  Algorithm algorithm = Algorithm::Auto;
  int peer = -1;                // SendRecv destination (ranks = {src, dst})
};

struct Protocol {
  std::string name;             // LL, LL128, Simple
  double latency_s = 0;         // per collective call
  double bus_cap_Bps = 0;       // cap on bus bandwidth per rank (0 = none)
  double efficiency = 1;        // fraction of link bandwidth reached
};

struct CommTuning {
  std::vector<Protocol> protocols{{"Simple", 10e-6, 0, 1.0}};  // intra-node (or single link)
  double nvls_efficiency = 0;   // in-switch reduction: algbw / port bandwidth (0 = no NVLS)
  double network_efficiency = 1.0;  // fraction of the NIC line rate reached
  double network_latency_s = 0;     // extra start-up latency when the group spans nodes
  // Share of a GPU's SMs a running communication kernel occupies (NCCL channels); compute that
  // overlaps a collective runs on the rest.
  double sm_fraction = 0.15;
  std::string intra_generation, nic_generation;
};

// The tuning of a node type and NIC (tables in tuning.cpp).
CommTuning tuning_for(const hw::NodeSpec& node, const hw::NicSpec& nic);

double bus_factor(CollectiveOp op, int n);

// Appends the collective's flows to `graph` after `deps`; returns a task that completes when the
// collective has. `gpu_resources` is reserved for SM-sharing models and may be null.
sim::TaskId append_collective(sim::TaskGraph& graph, const topo::Cluster& cluster,
                              const std::vector<sim::ResourceId>& link_resources, const CommTuning& tuning,
                              const Collective& c, const std::vector<sim::TaskId>& deps, uint16_t category,
                              sim::TrackId track, const std::vector<sim::ResourceId>* gpu_resources);

// The collective's time alone on idle links (the estimate NCCL-like protocol choice uses).
double estimate_seconds(const topo::Cluster& cluster, const CommTuning& tuning, const Collective& c);

struct CollectiveTiming {
  double seconds = 0, algbw_Bps = 0, busbw_Bps = 0;
  Algorithm algorithm = Algorithm::Ring;
  std::string protocol;
};

// One collective alone on a fresh engine (nccl-tests style).
CollectiveTiming time_collective(const topo::Cluster& cluster, const CommTuning& tuning, const Collective& c);

}  // namespace stacksim::coll
