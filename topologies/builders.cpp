// Cluster builders: the `cluster:` section's parser and the node / fabric layouts described in
// builders.hpp. Sizing checks live in one place (check) so that the parser and the builder agree.
#include "topologies/builders.hpp"
#include "config/schema.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace stacksim::topo {
namespace {

const std::vector<std::string> kTopologies = {"fat_tree", "rail_optimized", "single_switch", "dragonfly"};
const std::vector<std::string> kRoutings = {"dmodk", "ecmp"};
constexpr long long kMaxDragonflyGroups = 1024;  // Frontier has 74 compute groups, Aurora 166

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// NIC ports a fat tree of `tiers` tiers of `radix`-port switches holds.
long long capacity(int tiers, int radix) {
  const long long k = radix;
  return tiers == 2 ? k * k / 2 : k * k * k / 4;
}

// Checks shared by the parser (which rethrows them as InputError at the right key) and the
// builder (std::invalid_argument for programmatic configs).
struct Problem {
  std::string key, reason, fix;
};

std::optional<Problem> check(const ClusterConfig& c) {
  const hw::NodeSpec& s = c.node;
  if (c.nodes < 1)
    return Problem{"nodes", "must be at least 1, got " + std::to_string(c.nodes), "use nodes: 1 or more"};
  if (s.gpus_per_node < 1) return Problem{"gpus_per_node", "must be at least 1", "use the GPUs per server, e.g. 8"};
  if (s.direct_links() && (s.nvlink_group_size < 2 || s.gpus_per_node % s.nvlink_group_size != 0))
    return Problem{"gpus_per_node",
                   "node type " + s.name + " joins GPUs in " + (s.intra_type == "xgmi" ? "Infinity Fabric" : "NVLink") +
                       " groups of " + std::to_string(s.nvlink_group_size) + ", which must divide gpus_per_node (" +
                       std::to_string(s.gpus_per_node) + ")",
                   "use a multiple of " + std::to_string(s.nvlink_group_size)};
  if (s.nics < 0) return Problem{"nics_per_node", "must not be negative", "use e.g. 8 (one per GPU)"};
  if (c.nodes > 1 && s.nics == 0)
    return Problem{"nics_per_node", "a multi-node cluster needs NICs", "set nics_per_node to 1 or more"};
  if (!(c.nic.bandwidth_Bps > 0)) return Problem{"nic", "NIC bandwidth must be positive", "fix the NIC's file"};
  const FabricConfig& f = c.fabric;
  if (std::find(kTopologies.begin(), kTopologies.end(), f.topology) == kTopologies.end())
    return Problem{"fabric.topology", "unknown fabric topology '" + f.topology + "'",
                   "use one of: " + joined(kTopologies)};
  if (f.tiers != 0 && f.tiers != 2 && f.tiers != 3)
    return Problem{"fabric.tiers", "must be 2 or 3, got " + std::to_string(f.tiers), "use tiers: 2 or tiers: 3"};
  if (!(f.oversubscription >= 1.0))
    return Problem{"fabric.oversubscription", "must be at least 1 (1 = non-blocking)", "use e.g. 1, 2 or 4"};
  if (f.oversubscription > 1024)
    return Problem{"fabric.oversubscription", "is beyond 1024:1, far past any built fabric", "use e.g. 1, 2 or 4"};
  if (f.radix < 4 || f.radix % 2)
    return Problem{"fabric.radix", "must be an even number of ports >= 4, got " + std::to_string(f.radix),
                   "use e.g. 64"};
  if (!(f.switch_latency_s >= 0)) return Problem{"fabric.switch_latency", "must not be negative", "use e.g. 0.6 us"};
  if (f.topology == "dragonfly") {
    for (const auto& [key, value] : {std::pair<const char*, int>{"group_switches", f.group_switches},
                                     {"nics_per_switch", f.nics_per_switch},
                                     {"global_links_per_switch", f.global_links_per_switch}})
      if (value < 0)
        return Problem{std::string("fabric.") + key, "must not be negative", "leave it out for the balanced dragonfly"};
    const DragonflyShape d = dragonfly_shape(c);
    if (d.a < 1 || d.p < 1 || d.h < 1)
      return Problem{"fabric.radix", "is too small for a dragonfly", "use e.g. radix: 64"};
    if (d.p + d.a - 1 + d.h > f.radix)
      return Problem{"fabric.radix",
                     "a dragonfly switch needs nics_per_switch + group_switches - 1 + global_links_per_switch = " +
                         std::to_string(d.p + d.a - 1 + d.h) + " ports, more than its radix " + std::to_string(f.radix),
                     "use a larger radix or fewer switches per group, NICs or global links per switch"};
    if (d.groups > kMaxDragonflyGroups)
      return Problem{"fabric.nics_per_switch",
                     "this cluster would need " + std::to_string(d.groups) +
                         " dragonfly groups; the largest built have a few hundred (" +
                         std::to_string(kMaxDragonflyGroups) + " at most here)",
                     "raise nics_per_switch or group_switches"};
    if (d.groups - 1 > static_cast<long long>(d.a) * d.h)
      return Problem{"fabric.global_links_per_switch",
                     "a dragonfly of " + std::to_string(d.groups) + " groups needs a link between every two groups, " +
                         "but a group of " + std::to_string(d.a) + " switches has only " + std::to_string(d.a * d.h) +
                         " global links",
                     "raise global_links_per_switch or group_switches (or nics_per_switch, for fewer groups)"};
    return std::nullopt;
  }
  const int leaves = leaves_needed(c);
  const int need = tiers_needed(leaves, f.radix);
  if (need == 0)
    return Problem{"fabric.radix",
                   "a three-tier fat tree of radix " + std::to_string(f.radix) + " holds at most " +
                       std::to_string(capacity(3, f.radix)) + " NIC ports; this cluster needs " +
                       std::to_string(leaves) + " leaves of " + std::to_string(f.radix / 2) + " ports",
                   "use a larger radix"};
  if (f.tiers != 0 && f.tiers < need)
    return Problem{"fabric.tiers",
                   "a two-tier fat tree of radix " + std::to_string(f.radix) + " holds at most " +
                       std::to_string(f.radix) + " leaves (" + std::to_string(capacity(2, f.radix)) +
                       " NIC ports); this cluster needs " + std::to_string(leaves) + " leaves",
                   "use tiers: 3, a larger radix, or leave tiers out to choose automatically"};
  return std::nullopt;
}

}  // namespace

DragonflyShape dragonfly_shape(const ClusterConfig& c) {
  const FabricConfig& f = c.fabric;
  DragonflyShape d;
  d.a = f.group_switches > 0 ? f.group_switches : f.radix / 2;
  d.p = f.nics_per_switch > 0 ? f.nics_per_switch : f.radix / 4;
  d.h = f.global_links_per_switch > 0 ? f.global_links_per_switch : f.radix / 4;
  if (d.a > 0 && d.p > 0) d.groups = ceil_div(ceil_div(static_cast<long long>(c.num_nics()), d.p), d.a);
  return d;
}

int leaves_needed(const ClusterConfig& c) {
  if (c.nodes <= 1 || c.fabric.topology == "single_switch" || c.fabric.topology == "dragonfly" || c.fabric.radix < 2)
    return 0;
  const long long down = c.fabric.radix / 2;
  const long long n = c.fabric.topology == "rail_optimized" ? c.node.nics * ceil_div(c.nodes, down)
                                                            : ceil_div(static_cast<long long>(c.num_nics()), down);
  return static_cast<int>(std::min<long long>(n, 1 << 30));
}

int tiers_needed(int leaves, int radix) {
  if (leaves <= radix) return 2;
  if (leaves <= static_cast<long long>(radix) * (radix / 2)) return 3;
  return 0;
}

ClusterConfig parse_cluster_config(const config::Node& n, const hw::NodeCatalog& catalog) {
  n.require_map();
  n.check_keys(config::scenario_keys("cluster"));
  ClusterConfig c;
  try {
    c.node = catalog.node(n.required_string("node"));
  } catch (const config::InputError& e) {
    if (e.key() != "node") throw;  // a missing key already names itself
    n.fail("node", e.reason(), e.fix());
  }
  const long long nodes = n.required_int("nodes");
  if (nodes < 1) n.fail("nodes", "must be at least 1, got " + std::to_string(nodes), "use nodes: 1 or more");
  c.nodes = static_cast<int>(std::min<long long>(nodes, 1 << 24));
  c.gpu = n.string_or("gpu", c.node.gpu);
  if (n.has("gpus_per_node")) {
    const long long g = n.required_int("gpus_per_node");
    if (g < 1 || g > 1024) n.fail("gpus_per_node", "must be between 1 and 1024", "use the GPUs per server, e.g. 8");
    c.node.gpus_per_node = static_cast<int>(g);
  }
  if (n.has("nics_per_node")) {
    const long long k = n.required_int("nics_per_node");
    if (k < 0 || k > 1024) n.fail("nics_per_node", "must be between 0 and 1024", "use e.g. 8 (one per GPU)");
    c.node.nics = static_cast<int>(k);
  }
  c.gpudirect_rdma = n.bool_or("gpudirect_rdma", true);
  const std::string nic_name = n.string_or("nic", c.node.nic);
  try {
    c.nic = catalog.nic(nic_name);
  } catch (const config::InputError& e) {
    n.fail("nic", e.reason(), e.fix());
  }
  c.node.nic = nic_name;
  const config::Node f = n["fabric"];
  f.check_keys(config::scenario_keys("cluster.fabric"));
  c.fabric.topology = f.string_or("topology", c.fabric.topology);
  if (std::find(kTopologies.begin(), kTopologies.end(), c.fabric.topology) == kTopologies.end()) {
    const std::string near = config::nearest(c.fabric.topology, kTopologies);
    f.fail("topology", "unknown fabric topology '" + c.fabric.topology + "'",
           (near.empty() ? "" : "did you mean '" + near + "'? ") + "use one of: " + joined(kTopologies));
  }
  c.fabric.routing = f.string_or("routing", "");
  if (!c.fabric.routing.empty() && std::find(kRoutings.begin(), kRoutings.end(), c.fabric.routing) == kRoutings.end())
    f.fail("routing", "unknown routing '" + c.fabric.routing + "'",
           "use dmodk (InfiniBand's static fat-tree routing) or ecmp (per-flow hashing, Ethernet/RoCE)");
  c.fabric.tiers = static_cast<int>(std::clamp<long long>(f.optional_int("tiers").value_or(0), -1, 1000));
  if (f.has("tiers") && c.fabric.tiers != 2 && c.fabric.tiers != 3)
    f.fail("tiers", "must be 2 or 3", "use tiers: 2 or tiers: 3, or leave it out to choose automatically");
  c.fabric.oversubscription = f.optional_number("oversubscription").value_or(c.fabric.oversubscription);
  c.fabric.radix =
      static_cast<int>(std::clamp<long long>(f.optional_int("radix").value_or(c.fabric.radix), -1, 1 << 16));
  c.fabric.switch_latency_s =
      f.non_negative("switch_latency",
                     f.optional_quantity("switch_latency", sim::Dimension::Time).value_or(c.fabric.switch_latency_s));
  const bool dragonfly = c.fabric.topology == "dragonfly";
  for (const char* key : {"group_switches", "nics_per_switch", "global_links_per_switch"})
    if (f.has(key) && !dragonfly)
      f.fail(key, "applies to topology: dragonfly only", "remove it or set topology: dragonfly");
  // A dragonfly's taper is its global links; a stated oversubscription of 1 (non-blocking) agrees.
  if (dragonfly && (f.has("tiers") || (f.has("oversubscription") && c.fabric.oversubscription != 1.0)))
    f.fail(f.has("tiers") ? "tiers" : "oversubscription", "applies to fat trees only",
           "a dragonfly's sizes are group_switches, nics_per_switch and global_links_per_switch");
  auto count = [&](const char* key) {  // 0 = unstated (the balanced dragonfly's)
    const long long v = f.optional_int(key).value_or(0);
    if (f.has(key) && v < 1) f.fail(key, "must be at least 1", "use e.g. 16, or leave it out");
    return static_cast<int>(std::min<long long>(v, 1 << 16));
  };
  c.fabric.group_switches = count("group_switches");
  c.fabric.nics_per_switch = count("nics_per_switch");
  c.fabric.global_links_per_switch = count("global_links_per_switch");
  if (const auto p = check(c)) {
    if (p->key.rfind("fabric.", 0) == 0) f.fail(p->key.substr(7), p->reason, p->fix);
    n.fail(p->key, p->reason, p->fix);
  }
  if (c.fabric.tiers == 0 && c.fabric.topology != "single_switch" && !dragonfly)
    c.fabric.tiers = tiers_needed(leaves_needed(c), c.fabric.radix);
  return c;
}

namespace {

struct NodeDevices {
  std::vector<DeviceId> gpus, nics;
};

NodeDevices build_node(Cluster& c, const ClusterConfig& cfg, int node) {
  const hw::NodeSpec& s = cfg.node;
  const std::string p = "node" + std::to_string(node) + ".";
  auto dev = [&](DeviceKind kind, const std::string& name, int index, bool reduction = false) {
    return c.add_device({kind, p + name, node, index, 0, reduction});
  };
  NodeDevices out;
  const Link pcie{LinkKind::Pcie, s.pcie_bandwidth_Bps, s.pcie_latency_s};

  std::vector<DeviceId> cpus;
  for (int k = 0; k < s.cpu_sockets; ++k) cpus.push_back(dev(DeviceKind::Cpu, "cpu" + std::to_string(k), k));
  // Every pair of sockets has its own link (UPI / xGMI meshes of 2-4 sockets are fully connected).
  for (int a = 0; a < s.cpu_sockets; ++a)
    for (int b = a + 1; b < s.cpu_sockets; ++b)
      c.add_duplex(cpus[a], cpus[b], {LinkKind::CpuInterconnect, s.inter_socket_Bps, s.inter_socket_latency_s});
  std::optional<DeviceId> storage;
  if (s.storage_read_Bps > 0) {
    storage = dev(DeviceKind::Storage, "nvme", 0);
    c.add_link(*storage, cpus[0], {LinkKind::StorageLink, s.storage_read_Bps, s.storage_latency_s});
    c.add_link(cpus[0], *storage, {LinkKind::StorageLink, s.storage_write_Bps, s.storage_latency_s});
  }

  const int gpus = s.gpus_per_node;
  const int per_switch = std::max(1, s.gpus_per_pcie_switch);
  const int switches = (gpus + per_switch - 1) / per_switch;
  // Switch k sits under socket k / switches_per_socket while the node's sockets have room (the
  // catalogued layout); an override with more GPUs spreads the switches evenly instead.
  const bool fits = switches <= s.cpu_sockets * s.pcie_switches_per_socket;
  std::vector<DeviceId> pcie_switches;
  std::vector<int> socket_of_switch;
  for (int k = 0; k < switches; ++k) {
    const DeviceId sw = dev(DeviceKind::PcieSwitch, "pcie" + std::to_string(k), k);
    const int socket =
        fits ? k / s.pcie_switches_per_socket : static_cast<int>(static_cast<long long>(k) * s.cpu_sockets / switches);
    c.add_duplex(sw, cpus[socket], pcie);  // the switch's x16 uplink
    pcie_switches.push_back(sw);
    socket_of_switch.push_back(socket);
  }

  DeviceId nvswitch = 0;
  if (s.intra_type == "nvswitch") nvswitch = dev(DeviceKind::NvSwitch, "nvswitch", 0, s.in_switch_reduction);
  const Link nvlink{LinkKind::NvLink, s.intra_bandwidth_Bps, s.intra_latency_s};
  for (int i = 0; i < gpus; ++i) {
    const DeviceId g = dev(DeviceKind::Gpu, "gpu" + std::to_string(i), i);
    out.gpus.push_back(g);
    c.add_duplex(g, pcie_switches[i / per_switch], pcie);
    if (s.intra_type == "nvswitch") c.add_duplex(g, nvswitch, nvlink);
  }
  if (s.direct_links()) {
    // Direct links inside each group (NVLink bridges and meshes, AMD's Infinity Fabric mesh); a
    // GPU's link bandwidth is split evenly over its peers.
    const int group = s.nvlink_group_size;
    const Link peer{LinkKind::NvLink, s.intra_bandwidth_Bps / (group - 1), s.intra_latency_s};
    for (int a = 0; a < gpus; ++a)
      for (int b = a + 1; b < gpus && b / group == a / group; ++b) c.add_duplex(out.gpus[a], out.gpus[b], peer);
  }

  for (int k = 0; k < s.nics; ++k) {
    const DeviceId nic = dev(DeviceKind::Nic, "nic" + std::to_string(k), k);
    out.nics.push_back(nic);
    c.add_duplex(nic, pcie_switches[static_cast<long long>(k) * switches / s.nics], pcie);
  }
  if (!out.nics.empty()) {
    for (int i = 0; i < gpus; ++i) {
      // GPU i's rail NIC, or all of its own NICs when the node has several per GPU.
      const long long first = static_cast<long long>(i) * s.nics / gpus,
                      last = static_cast<long long>(i + 1) * s.nics / gpus;
      if (last - first > 1)
        c.set_gateways(out.gpus[i], {out.nics.begin() + first, out.nics.begin() + last});
      else
        c.set_gateway(out.gpus[i], out.nics[first]);
      if (!cfg.gpudirect_rdma) c.set_staging(out.gpus[i], cpus[socket_of_switch[i / per_switch]]);
    }
    // A CPU leaves the node through the first NIC under its own socket, else NIC 0.
    for (int k = 0; k < s.cpu_sockets; ++k) {
      DeviceId gw = out.nics[0];
      for (int j = s.nics - 1; j >= 0; --j)
        if (socket_of_switch[static_cast<long long>(j) * switches / s.nics] == k) gw = out.nics[j];
      c.set_gateway(cpus[k], gw);
      if (k == 0 && storage) c.set_gateway(*storage, gw);
    }
  }
  return out;
}

// The dragonfly of builders.hpp: one switch stands for each group, the group's global links to
// another group merged into one link.
void build_dragonfly(Cluster& c, const ClusterConfig& cfg, const std::vector<NodeDevices>& nodes,
                     const Link& nic_link) {
  const DragonflyShape d = dragonfly_shape(cfg);
  std::vector<DeviceId> group(static_cast<size_t>(d.groups));
  for (size_t g = 0; g < group.size(); ++g)
    group[g] = c.add_device({DeviceKind::NetworkSwitch, "group" + std::to_string(g), -1, static_cast<int32_t>(g), 1,
                             false, static_cast<int32_t>(g)});
  const long long nics_per_group = static_cast<long long>(d.a) * d.p;
  long long port = 0;
  for (const auto& n : nodes)
    for (DeviceId nic : n.nics) c.add_duplex(nic, group[port++ / nics_per_group], nic_link);
  if (d.groups < 2) return;
  const long long links_per_pair = static_cast<long long>(d.a) * d.h / (d.groups - 1);
  const Link global{LinkKind::Network, links_per_pair * cfg.nic.bandwidth_Bps, cfg.fabric.switch_latency_s};
  for (size_t i = 0; i < group.size(); ++i)
    for (size_t j = i + 1; j < group.size(); ++j) c.add_duplex(group[i], group[j], global);
}

void build_fabric(Cluster& c, const ClusterConfig& cfg, const std::vector<NodeDevices>& nodes) {
  const FabricConfig& f = cfg.fabric;
  const double nic_bw = cfg.nic.bandwidth_Bps;
  // A NIC-to-NIC path through one switch costs the NIC's published latency; every
  // switch-to-switch link adds the switch latency.
  const Link nic_link{LinkKind::Network, nic_bw, cfg.nic.latency_s / 2};
  int counter[4] = {0, 0, 0, 0};
  auto new_switch = [&](int tier) {
    static const char* const kTierName[] = {"", "leaf", "spine", "core"};
    const int index = counter[tier]++;
    return c.add_device({DeviceKind::NetworkSwitch, kTierName[tier] + std::to_string(index), -1, index, tier, false});
  };
  if (f.topology == "single_switch") {
    const DeviceId sw = new_switch(1);
    for (const auto& n : nodes)
      for (DeviceId nic : n.nics) c.add_duplex(nic, sw, nic_link);
    return;
  }
  if (f.topology == "dragonfly") {
    build_dragonfly(c, cfg, nodes, nic_link);
    return;
  }
  const int down = f.radix / 2;  // NIC ports per leaf
  const int leaves = leaves_needed(cfg);
  std::vector<DeviceId> leaf(leaves);
  for (int i = 0; i < leaves; ++i) leaf[i] = new_switch(1);
  const int nodes_n = static_cast<int>(nodes.size());
  const int rails = cfg.node.nics;
  for (int n = 0; n < nodes_n; ++n)
    for (int r = 0; r < rails; ++r) {
      // rail_optimized: leaf (group, rail) with group = n / down, groups laid out one after the
      // other so that a pod holds whole groups (every rail of radix/2 nodes per group).
      const long long index = f.topology == "rail_optimized" ? static_cast<long long>(n / down) * rails + r
                                                             : (static_cast<long long>(n) * rails + r) / down;
      c.add_duplex(nodes[n].nics[r], leaf[index], nic_link);
    }
  if (leaves == 1) return;
  const double leaf_up_Bps = down * nic_bw / f.oversubscription;  // per leaf, all uplinks together
  const int tiers = f.tiers == 0 ? tiers_needed(leaves, f.radix) : f.tiers;
  const int pod_leaves = tiers == 2 ? leaves : down;
  const int pods = (leaves + pod_leaves - 1) / pod_leaves;
  // Fewer spines than radix/2 in a small fabric give the same capacity (links merge) with fewer
  // resources.
  const int spines_per_pod = std::min(down, pod_leaves);
  const Link up{LinkKind::Network, leaf_up_Bps / spines_per_pod, f.switch_latency_s};
  std::vector<std::vector<DeviceId>> spine(pods);
  for (int p = 0; p < pods; ++p)
    for (int k = 0; k < spines_per_pod; ++k) spine[p].push_back(new_switch(2));
  for (int i = 0; i < leaves; ++i)
    for (DeviceId sp : spine[i / pod_leaves]) c.add_duplex(leaf[i], sp, up);
  if (pods == 1) return;
  // Spines are not oversubscribed: a spine sends up what a full pod's leaves send it.
  const double spine_up_Bps = pod_leaves * up.bandwidth_Bps;
  const int cores_per_group = down;
  const Link core_link{LinkKind::Network, spine_up_Bps / cores_per_group, f.switch_latency_s};
  for (int k = 0; k < spines_per_pod; ++k)
    for (int j = 0; j < cores_per_group; ++j) {
      const DeviceId core = new_switch(3);
      for (int p = 0; p < pods; ++p) c.add_duplex(spine[p][k], core, core_link);
    }
}

}  // namespace

Cluster build_cluster(const ClusterConfig& cfg) {
  if (const auto p = check(cfg))
    throw std::invalid_argument("cluster." + p->key + ": " + p->reason + " (" + p->fix + ")");
  Cluster c;
  std::vector<NodeDevices> nodes;
  nodes.reserve(cfg.nodes);
  for (int n = 0; n < cfg.nodes; ++n) nodes.push_back(build_node(c, cfg, n));
  if (cfg.nodes > 1) build_fabric(c, cfg, nodes);
  c.set_shape(cfg.nodes, cfg.node.gpus_per_node);
  const std::string routing =
      cfg.fabric.routing.empty() ? (cfg.nic.fabric == "infiniband" ? "dmodk" : "ecmp") : cfg.fabric.routing;
  c.set_destination_routing(routing == "dmodk");
  return c;
}

Cluster build_cluster(const ClusterConfig& cfg, const hw::NodeCatalog& catalog) {
  catalog.node(cfg.node.name);
  catalog.nic(cfg.nic.name);
  return build_cluster(cfg);
}

}  // namespace stacksim::topo
