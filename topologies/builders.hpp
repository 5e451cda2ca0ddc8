// Building clusters from the scenario's `cluster:` section and the node catalogue.
//
//   cluster:
//     node: dgx-h100            # node type (models/hardware/nodes/<name>.yaml)
//     nodes: 4                  # servers
//     gpu: H100-SXM5-80GB       # optional: another GPU in the same chassis (what-if)
//     gpus_per_node: 8          # optional override
//     nics_per_node: 8          # optional override
//     nic: cx7-ndr400           # optional override (models/hardware/nics/<name>.yaml)
//     fabric:
//       topology: fat_tree      # fat_tree | rail_optimized | single_switch
//       tiers: 2                # fat_tree: 2 (leaf/spine) or 3 (leaf/spine/core in pods)
//       oversubscription: 1.0   # leaf downlink : uplink bandwidth
//       radix: 64               # switch ports
//       switch_latency: 0.6 us
//
// Inside a node (DGX/HGX style): every GPU has a link of the node's NVLink bandwidth to one
// logical NVSwitch (non-blocking crossbar; only the ports constrain), GPUs and NICs pair up behind
// PCIe switches (GPU i uses NIC i * nics / gpus, its rail), PCIe switches hang off the CPU
// sockets, which are joined by the inter-socket link; node-local storage sits on socket 0.
// A PCIe-only node has no NVSwitch: peer traffic crosses PCIe switches and, between sockets, the
// inter-socket link.
// Fabric: leaves take radix/2 NIC ports each; leaf uplinks carry (downlink bandwidth) /
// oversubscription, spread evenly over the spines of the leaf's pod. rail_optimized puts NIC i of
// every node on the leaves of rail i. Parallel cables between two switches are merged into one
// link of their summed bandwidth (same max-min result as spreading flows evenly over them).
#pragma once
#include <string>

#include "config/yaml.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::topo {

struct FabricConfig {
  std::string topology = "fat_tree";
  int tiers = 2;
  double oversubscription = 1.0;
  int radix = 64;
  double switch_latency_s = 0.6e-6;
};

struct ClusterConfig {
  hw::NodeSpec node;   // with overrides applied
  hw::NicSpec nic;
  std::string gpu;     // GPU catalogue name
  int nodes = 1;
  FabricConfig fabric;
  int num_gpus() const { return nodes * node.gpus_per_node; }
};

ClusterConfig parse_cluster_config(const config::Node& cluster, const hw::NodeCatalog& catalog);
Cluster build_cluster(const ClusterConfig& config);

}  // namespace stacksim::topo
