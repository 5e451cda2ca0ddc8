// Building clusters from the scenario's `cluster:` section and the node catalogue.
//
//   cluster:
//     node: dgx-h100            # node type (models/hardware/nodes/<name>.yaml)
//     nodes: 4                  # servers
//     gpu: H100-SXM5-80GB       # optional: another GPU in the same chassis (what-if)
//     gpus_per_node: 8          # optional override
//     nics_per_node: 8          # optional override
//     nic: cx7-ndr400           # optional override (models/hardware/nics/<name>.yaml)
//     gpudirect_rdma: true      # false: GPU <-> NIC traffic is staged through host memory (the
//                               # GPU's CPU socket), crossing its PCIe switch uplink both ways
//     fabric:
//       topology: fat_tree      # fat_tree | rail_optimized | single_switch | dragonfly
//       tiers: 2                # 2 (leaf/spine) or 3 (leaf/spine/core in pods); default: the
//                               # fewest tiers whose capacity at this radix holds every NIC
//       oversubscription: 1.0   # leaf downlink : uplink bandwidth
//       radix: 64               # switch ports
//       switch_latency: 0.6 us  # per switch-to-switch link
//       group_switches: 32      # dragonfly: switches per group (default radix / 2)
//       nics_per_switch: 16     # dragonfly: NIC ports per switch (default radix / 4)
//       global_links_per_switch: 16  # dragonfly: links to other groups per switch (default radix / 4)
//
// Inside a node (DGX/HGX style, after the DGX A100/H100 block diagrams): every GPU has one link of
// the node's NVLink bandwidth to one logical NVSwitch (non-blocking crossbar; only the ports
// constrain), GPUs and NICs share PCIe switches (GPU i uses NIC i * nics / gpus, its rail), PCIe
// switches hang off the CPU sockets, which are joined by the inter-socket link; node-local NVMe
// sits on socket 0. An `nvlink` node joins GPUs by direct links inside groups (bridged pairs); a
// `pcie` node has no NVLink, so peer traffic crosses PCIe switches and, between sockets, the CPUs.
//
// Fabric (folded Clos, after Al-Fares et al. 2008 "A scalable, commodity data center network
// architecture"): a leaf gives radix/2 ports to NICs and carries (those ports' bandwidth) /
// oversubscription up to the spines of its pod. Two tiers: one pod, at most `radix` leaves
// (radix^2/2 NIC ports). Three tiers: pods of radix/2 leaves and radix/2 spines, spine j of every
// pod joined to the radix/2 cores of group j, at most `radix` pods (radix^3/4 NIC ports); spines
// are not oversubscribed. fat_tree fills leaves node by node; rail_optimized gives NIC i of every
// node its own leaves (rail i; one leaf per rail per group of radix/2 nodes), the rails joined by
// the spines. Parallel cables between two switches are merged into one link of their summed
// bandwidth: the max-min result is the same as spreading flows evenly over them.
//
// dragonfly (Kim et al. 2008, "Technology-Driven, Highly-Scalable Dragonfly Topology"; HPE
// Slingshot, Cray Aries): groups of `group_switches` switches, every two switches of a group joined
// by a local link, each switch with `nics_per_switch` NIC ports and `global_links_per_switch` links
// to other groups, all at the NIC's line rate; NICs fill groups node by node. A group is modelled as
// one non-blocking switch: adaptive routing spreads traffic inside a group over its two-hop paths
// (a balanced group has a - 1 = 2p - 1 local ports per switch against p NIC ports). The a*h global
// links of a group are shared evenly among the other groups, floor(a*h / (G-1)) between every two
// groups, merged into one link of their summed rate. Routes between groups are minimal (one global
// hop): exact for uniform traffic; traffic concentrated between two groups, which adaptive routing
// would also send through a third group (Valiant), gets only the direct links.
#pragma once
#include <string>

#include "config/yaml.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::topo {

struct FabricConfig {
  std::string topology = "fat_tree";  // fat_tree | rail_optimized | single_switch | dragonfly
  int tiers = 0;                      // 2 or 3; 0 = the fewest that hold every NIC at this radix
  double oversubscription = 1.0;
  int radix = 64;
  double switch_latency_s = 0.6e-6;
  // How switches choose among equal up-links: "dmodk" (static destination-based routing, as an
  // InfiniBand subnet manager's fat-tree engines program it: up-link = destination port mod the
  // up-link count, so a shift permutation such as a ring crosses the fabric without two flows on
  // one link) or "ecmp" (a per-flow hash, as Ethernet/RoCE switches spread flows: flows collide).
  // Empty = by the NIC's fabric: dmodk on InfiniBand, ecmp elsewhere.
  std::string routing;
  // Dragonfly (0 = the balanced dragonfly of this radix, Kim et al. 2008: radix/4 NICs and radix/4
  // global links per switch, radix/2 switches per group, all joined in the group).
  int group_switches = 0;
  int nics_per_switch = 0;
  int global_links_per_switch = 0;
};

struct ClusterConfig {
  hw::NodeSpec node;  // with overrides applied (gpus_per_node, nics, nic name)
  hw::NicSpec nic;    // the resolved NIC
  std::string gpu;    // GPU catalogue name
  int nodes = 1;
  FabricConfig fabric;
  bool gpudirect_rdma = true;  // false: inter-node traffic is staged through host memory
  int num_gpus() const { return nodes * node.gpus_per_node; }
  int num_nics() const { return nodes * node.nics; }
};

// The dragonfly's sizes with defaults filled: switches per group (a), NICs per switch (p), global
// links per switch (h), and the groups the cluster's NICs need.
struct DragonflyShape {
  int a = 0, p = 0, h = 0;
  long long groups = 0;
};
DragonflyShape dragonfly_shape(const ClusterConfig& config);

// Reads the `cluster:` section (InputError naming file, line, key and fix on bad input: unknown
// key, unknown node or NIC with the nearest name, nodes < 1, a fabric too big for its radix ...).
ClusterConfig parse_cluster_config(const config::Node& cluster, const hw::NodeCatalog& catalog);

// Fewest tiers (2 or 3) of a fat tree of `radix`-port switches that holds `leaves` leaves (two
// tiers: radix leaves; three: radix pods of radix/2 leaves); 0 if even three tiers cannot.
int tiers_needed(int leaves, int radix);
// Leaves the fabric needs (0 for single_switch or one node).
int leaves_needed(const ClusterConfig& config);

// Builds devices, links and gateways. std::invalid_argument if the configuration is inconsistent
// (parse_cluster_config reports the same problems as InputError first).
Cluster build_cluster(const ClusterConfig& config);
// The same, after checking that the config's node type and NIC are in `catalog` (the config
// carries the resolved specs, so nothing else is read from it).
Cluster build_cluster(const ClusterConfig& config, const hw::NodeCatalog& catalog);

}  // namespace stacksim::topo
