// Internal to the collectives library: the decomposition of a collective into phases of flows
// (collective.hpp describes the algorithms). A plan holds routed flows and the number of
// intra-node and inter-node algorithm steps of each phase, which the latency model counts.
#pragma once
#include <vector>

#include "models/collectives/collective.hpp"

namespace stacksim::coll::detail {

struct Flow {
  int src = 0, dst = 0;  // global ranks (for NVLS half-paths src == dst)
  double bytes = 0;
  topo::Route route;
  int nic_slot = 0;  // which of the GPUs' NICs an inter-node flow leaves and enters by
};

struct Phase {
  std::vector<Flow> flows;
  bool in_switch = false;  // NVLS efficiency applies
  int intra_steps = 0;     // latency: steps between GPUs of one node
  int inter_steps = 0;     //          steps that cross nodes
};

struct Plan {
  Algorithm algorithm = Algorithm::Ring;
  std::vector<Phase> phases;
  double bus_bytes = 0;   // bus bytes per rank, for per-rank protocol caps
  double ramp_bytes = 0;  // each rank's share per peer (S/n; S for broadcast/send), for the size ramp
  bool multi_node = false;
};

// Ranks grouped by node, in the group's order (nodes in order of first appearance).
std::vector<std::vector<int>> ranks_by_node(const topo::Cluster& c, const std::vector<int>& ranks);

// True if every node of the group holds the same number of its ranks.
bool uniform_nodes(const std::vector<std::vector<int>>& nodes);

// True if the group is one node whose GPUs meet in an NVSwitch with in-switch reduction.
bool nvls_capable(const topo::Cluster& c, const std::vector<int>& ranks);
// Every node's ranks can reduce in-switch (NVLSTree across nodes).
bool nvls_tree_capable(const topo::Cluster& c, const std::vector<std::vector<int>>& nodes);

// The plan of `col` with `algorithm` (not Auto). Throws std::invalid_argument if the group
// cannot run it (Tree/Hierarchical on one node, NVLS without an NVLS switch, ...).
Plan make_plan(const topo::Cluster& c, const Collective& col, Algorithm algorithm);

}  // namespace stacksim::coll::detail
