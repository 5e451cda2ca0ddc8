// Copies between GPUs and host memory (ZeRO-Offload's gradients and updated shards, offloaded
// parameters and activations): every GPU of a set copies at once, each over its shortest route to
// a CPU socket of its own node. Shared by the replay (one activity weighted by the copies on each
// link) and the fast tier (the most loaded link's time).
#pragma once
#include <map>
#include <vector>

#include "models/workload/replay.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::workload {

// How many of the copies of `ranks` cross each link. Throws std::invalid_argument when a GPU's
// node has no CPU socket.
std::map<topo::LinkId, int> host_copy_links(const topo::Cluster& cluster, const std::vector<int>& ranks, bool to_host);
// Seconds per byte of each GPU's copy when all of `ranks` copy at once and nothing else runs.
double host_copy_seconds_per_byte(const topo::Cluster& cluster, const std::vector<int>& ranks, bool to_host);
// The GPUs of pipeline stage `stage` on node `node`: the ones whose copies run together (the
// stages of a pipeline inside one server copy at different times of the step).
std::vector<int> stage_ranks_on_node(const StepProgram& p, const topo::Cluster& cluster, int stage, int node);

}  // namespace stacksim::workload
