#include "topologies/builders.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace stacksim::topo {

ClusterConfig parse_cluster_config(const config::Node& n, const hw::NodeCatalog& catalog) {
  n.require_map();
  n.check_keys({"node", "nodes", "gpu", "gpus_per_node", "nics_per_node", "nic", "fabric"});
  ClusterConfig c;
  const std::string node_name = n.required_string("node");
  try {
    c.node = catalog.node(node_name);
  } catch (const config::InputError& e) {
    n.fail("node", e.reason(), e.fix());
  }
  c.nodes = static_cast<int>(n.required_int("nodes"));
  if (c.nodes < 1) n.fail("nodes", "must be at least 1, got " + std::to_string(c.nodes), "use nodes: 1 or more");
  c.gpu = n.string_or("gpu", c.node.gpu);
  if (n.has("gpus_per_node")) {
    const long long g = n.required_int("gpus_per_node");
    if (g < 1 || g > 64) n.fail("gpus_per_node", "must be between 1 and 64", "use the GPUs per server, e.g. 8");
    c.node.gpus_per_node = static_cast<int>(g);
  }
  if (n.has("nics_per_node")) {
    const long long k = n.required_int("nics_per_node");
    if (k < 0 || k > 64) n.fail("nics_per_node", "must be between 0 and 64", "use e.g. 8 (one per GPU)");
    c.node.nics = static_cast<int>(k);
  }
  const std::string nic_name = n.string_or("nic", c.node.nic);
  try {
    c.nic = catalog.nic(nic_name);
  } catch (const config::InputError& e) {
    n.fail("nic", e.reason(), e.fix());
  }
  c.node.nic = nic_name;
  const config::Node f = n["fabric"];
  f.check_keys({"topology", "tiers", "oversubscription", "radix", "switch_latency"});
  c.fabric.topology = f.string_or("topology", "fat_tree");
  if (c.fabric.topology != "fat_tree" && c.fabric.topology != "rail_optimized" &&
      c.fabric.topology != "single_switch")
    f.fail("topology", "unknown fabric topology '" + c.fabric.topology + "'",
           "use fat_tree, rail_optimized or single_switch");
  c.fabric.tiers = static_cast<int>(f.optional_int("tiers").value_or(2));
  if (c.fabric.tiers != 2 && c.fabric.tiers != 3) f.fail("tiers", "must be 2 or 3", "use tiers: 2 or tiers: 3");
  c.fabric.oversubscription = f.optional_number("oversubscription").value_or(1.0);
  if (!(c.fabric.oversubscription >= 1.0))
    f.fail("oversubscription", "must be at least 1 (1 = non-blocking)", "use e.g. 1, 2 or 4");
  c.fabric.radix = static_cast<int>(f.optional_int("radix").value_or(64));
  if (c.fabric.radix < 4 || c.fabric.radix % 2) f.fail("radix", "must be an even number of ports >= 4", "use e.g. 64");
  c.fabric.switch_latency_s =
      f.non_negative("switch_latency", f.optional_quantity("switch_latency", sim::Dimension::Time).value_or(0.6e-6));
  if (c.nodes > 1 && c.node.nics == 0)
    n.fail("nics_per_node", "a multi-node cluster needs NICs", "set nics_per_node to 1 or more");
  return c;
}

namespace {

struct NodeDevices {
  std::vector<DeviceId> gpus, nics;
};

NodeDevices build_node(Cluster& c, const ClusterConfig& cfg, int node) {
  const hw::NodeSpec& s = cfg.node;
  const std::string p = "node" + std::to_string(node) + ".";
  NodeDevices out;
  const Link pcie{LinkKind::Pcie, s.pcie_bandwidth_Bps, s.pcie_latency_s};
  std::vector<DeviceId> cpus;
  for (int k = 0; k < s.cpu_sockets; ++k)
    cpus.push_back(c.add_device({DeviceKind::Cpu, p + "cpu" + std::to_string(k), node, k, 0, false}));
  for (int k = 1; k < s.cpu_sockets; ++k)
    c.add_duplex(cpus[k - 1], cpus[k], {LinkKind::CpuInterconnect, s.inter_socket_Bps, 0.1e-6});
  if (s.storage_read_Bps > 0) {
    const DeviceId st = c.add_device({DeviceKind::Storage, p + "nvme", node, 0, 0, false});
    c.add_duplex(st, cpus[0], {LinkKind::StorageLink, s.storage_read_Bps, 10e-6});
  }
  DeviceId nvswitch = 0;
  const bool has_nvswitch = s.intra_type == "nvswitch";
  if (has_nvswitch)
    nvswitch = c.add_device({DeviceKind::NvSwitch, p + "nvswitch", node, 0, 0, s.in_switch_reduction});
  const int gpus = s.gpus_per_node;
  const int per_switch = std::max(1, s.gpus_per_pcie_switch);
  const int switches = (gpus + per_switch - 1) / per_switch;
  std::vector<DeviceId> pcie_switches;
  for (int k = 0; k < switches; ++k) {
    const DeviceId sw = c.add_device({DeviceKind::PcieSwitch, p + "pcie" + std::to_string(k), node, k, 0, false});
    const int socket = static_cast<int>(static_cast<long long>(k) * s.cpu_sockets / switches);
    // The switch's uplink to the CPU is one x16 link.
    c.add_duplex(sw, cpus[socket], pcie);
    pcie_switches.push_back(sw);
  }
  for (int i = 0; i < gpus; ++i) {
    const DeviceId g = c.add_device({DeviceKind::Gpu, p + "gpu" + std::to_string(i), node, i, 0, false});
    out.gpus.push_back(g);
    c.add_duplex(g, pcie_switches[i / per_switch], pcie);
    if (has_nvswitch) c.add_duplex(g, nvswitch, {LinkKind::NvLink, s.intra_bandwidth_Bps, s.intra_latency_s});
  }
  for (int k = 0; k < s.nics; ++k) {
    const DeviceId nic = c.add_device({DeviceKind::Nic, p + "nic" + std::to_string(k), node, k, 0, false});
    out.nics.push_back(nic);
    const int sw = static_cast<int>(static_cast<long long>(k) * switches / s.nics);
    c.add_duplex(nic, pcie_switches[sw], pcie);
  }
  if (!out.nics.empty()) {
    for (int i = 0; i < gpus; ++i)
      c.set_gateway(out.gpus[i], out.nics[static_cast<long long>(i) * s.nics / gpus]);
    for (DeviceId cpu : cpus) c.set_gateway(cpu, out.nics[0]);
  }
  return out;
}

// Adds `bw` to the (possibly existing) link a->b and b->a.
class LinkMerger {
 public:
  explicit LinkMerger(Cluster& c) : c_(c) {}
  void add(DeviceId a, DeviceId b, double bw, double lat) { pending_[{a, b}] += bw; lat_ = lat; }
  void flush() {
    for (const auto& [ab, bw] : pending_) c_.add_duplex(ab.first, ab.second, {LinkKind::Network, bw, lat_});
    pending_.clear();
  }

 private:
  Cluster& c_;
  std::map<std::pair<DeviceId, DeviceId>, double> pending_;
  double lat_ = 0;
};

void build_fabric(Cluster& c, const ClusterConfig& cfg, const std::vector<NodeDevices>& nodes) {
  const FabricConfig& f = cfg.fabric;
  const double nic_bw = cfg.nic.bandwidth_Bps;
  const double lat = f.switch_latency_s;
  const Link nic_link{LinkKind::Network, nic_bw, cfg.nic.latency_s};
  std::vector<DeviceId> all_nics;
  if (f.topology == "rail_optimized") {
    // Rail-major order: the NICs of rail r of consecutive nodes share leaves.
    for (int r = 0; r < cfg.node.nics; ++r)
      for (const auto& n : nodes) all_nics.push_back(n.nics[r]);
  } else {
    for (const auto& n : nodes) all_nics.insert(all_nics.end(), n.nics.begin(), n.nics.end());
  }
  int sw_index = 0;
  auto new_switch = [&](int tier) {
    return c.add_device({DeviceKind::NetworkSwitch, (tier == 1 ? "leaf" : tier == 2 ? "spine" : "core") +
                                                        std::to_string(sw_index++), -1, -1, tier, false});
  };
  if (f.topology == "single_switch") {
    const DeviceId sw = new_switch(1);
    for (DeviceId nic : all_nics) c.add_duplex(nic, sw, nic_link);
    return;
  }
  const int down = f.radix / 2;  // NIC ports per leaf
  const int leaves = static_cast<int>((all_nics.size() + down - 1) / down);
  std::vector<DeviceId> leaf(leaves);
  for (int i = 0; i < leaves; ++i) leaf[i] = new_switch(1);
  for (size_t i = 0; i < all_nics.size(); ++i) c.add_duplex(all_nics[i], leaf[i / down], nic_link);
  if (leaves == 1) return;
  const double leaf_up_bw = down * nic_bw / f.oversubscription;  // per leaf, all uplinks together
  LinkMerger merge(c);
  if (f.tiers == 2) {
    const int spines = std::max(1, std::min(down, leaves));
    std::vector<DeviceId> spine(spines);
    for (int k = 0; k < spines; ++k) spine[k] = new_switch(2);
    for (int i = 0; i < leaves; ++i)
      for (int k = 0; k < spines; ++k) merge.add(leaf[i], spine[k], leaf_up_bw / spines, lat);
    merge.flush();
    return;
  }
  // Three tiers: pods of `down` leaves and `down` spines; spine j of every pod meets the cores
  // of group j. Spine uplinks are not oversubscribed.
  const int pods = (leaves + down - 1) / down;
  const int spines_per_pod = std::min(down, leaves);
  std::vector<std::vector<DeviceId>> spine(pods);
  for (int p = 0; p < pods; ++p)
    for (int k = 0; k < spines_per_pod; ++k) spine[p].push_back(new_switch(2));
  for (int i = 0; i < leaves; ++i)
    for (int k = 0; k < spines_per_pod; ++k) merge.add(leaf[i], spine[i / down][k], leaf_up_bw / spines_per_pod, lat);
  if (pods > 1) {
    const int cores_per_group = std::max(1, down / 4);
    const double spine_up_bw = std::min(down, leaves) * leaf_up_bw / spines_per_pod;
    for (int k = 0; k < spines_per_pod; ++k) {
      std::vector<DeviceId> cores;
      for (int j = 0; j < cores_per_group; ++j) cores.push_back(new_switch(3));
      for (int p = 0; p < pods; ++p)
        for (DeviceId core : cores) merge.add(spine[p][k], core, spine_up_bw / cores_per_group, lat);
    }
  }
  merge.flush();
}

}  // namespace

Cluster build_cluster(const ClusterConfig& cfg) {
  Cluster c;
  std::vector<NodeDevices> nodes;
  nodes.reserve(cfg.nodes);
  for (int n = 0; n < cfg.nodes; ++n) nodes.push_back(build_node(c, cfg, n));
  if (cfg.nodes > 1) build_fabric(c, cfg, nodes);
  c.set_shape(cfg.nodes, cfg.node.gpus_per_node);
  return c;
}

}  // namespace stacksim::topo
