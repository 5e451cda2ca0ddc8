// Topology builders and routing: device and link counts, the paths traffic takes, ECMP,
// oversubscription, fabric sizing and bad configurations. Every expectation is derived from the
// builder's stated layout (builders.hpp) in a comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "models/hardware/node_spec.hpp"
#include "sim/engine.hpp"
#include "topologies/builders.hpp"

using namespace stacksim;
using namespace stacksim::topo;

namespace {

const hw::NodeCatalog& catalog() {
  static const hw::NodeCatalog c = hw::NodeCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

ClusterConfig cfg_of(const std::string& yaml) {
  return parse_cluster_config(config::Node::load_string(yaml, "test.yaml"), catalog());
}

Cluster build(const std::string& yaml) { return build_cluster(cfg_of(yaml), catalog()); }

// Kinds of the devices a route enters, in order.
std::vector<DeviceKind> kinds(const Cluster& c, const Route& r) {
  std::vector<DeviceKind> k;
  for (LinkId l : r.links) k.push_back(c.device(c.link_target(l)).kind);
  return k;
}

int count_tier(const Cluster& c, const Route& r, int tier) {
  int n = 0;
  for (LinkId l : r.links) {
    const Device& d = c.device(c.link_target(l));
    n += d.kind == DeviceKind::NetworkSwitch && d.tier == tier;
  }
  return n;
}

int count_kind(const Cluster& c, const Route& r, LinkKind kind) {
  int n = 0;
  for (LinkId l : r.links) n += c.link(l).kind == kind;
  return n;
}

size_t devices_of(const Cluster& c, DeviceKind kind) {
  size_t n = 0;
  for (DeviceId d = 0; d < c.num_devices(); ++d) n += c.device(d).kind == kind;
  return n;
}

size_t switches_of_tier(const Cluster& c, int tier) {
  size_t n = 0;
  for (DeviceId d = 0; d < c.num_devices(); ++d)
    n += c.device(d).kind == DeviceKind::NetworkSwitch && c.device(d).tier == tier;
  return n;
}

std::string error_of(const std::string& yaml) {
  try {
    cfg_of(yaml);
  } catch (const config::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Builders, DgxNodeDevicesAndLinks) {
  const Cluster c = build("node: dgx-h100\nnodes: 1\n");
  // 8 GPUs, 1 NVSwitch, 8/2 = 4 PCIe switches, 8 NICs, 2 CPU sockets, 1 NVMe.
  EXPECT_EQ(c.num_devices(), 8u + 1 + 4 + 8 + 2 + 1);
  EXPECT_EQ(devices_of(c, DeviceKind::PcieSwitch), 4u);
  // Directed links: GPU-NVSwitch 2x8, GPU-PCIe 2x8, NIC-PCIe 2x8, PCIe-CPU 2x4, CPU-CPU 2,
  // NVMe read + write 2; no fabric for one node.
  EXPECT_EQ(c.num_links(), 16u + 16 + 16 + 8 + 2 + 2);
  EXPECT_EQ(c.num_gpus(), 8);
  EXPECT_EQ(c.num_nodes(), 1);
  EXPECT_TRUE(c.device(c.find("node0.nvswitch")).in_switch_reduction);
  const Cluster a100 = build("node: dgx-a100\nnodes: 1\n");
  EXPECT_FALSE(a100.device(a100.find("node0.nvswitch")).in_switch_reduction);  // NVSwitch 2.0: no NVLS
}

TEST(Builders, DgxGpuPeersGoThroughTheNvSwitch) {
  const Cluster c = build("node: dgx-h100\nnodes: 1\n");
  // GPU 0 and GPU 1 also share a PCIe switch (2 hops too); the wider NVLink wins.
  for (int dst : {1, 5}) {
    const Route r = c.gpu_route(0, dst);
    ASSERT_EQ(r.links.size(), 2u);
    EXPECT_EQ(kinds(c, r)[0], DeviceKind::NvSwitch);
    EXPECT_DOUBLE_EQ(r.bottleneck_Bps, 450e9);
    EXPECT_DOUBLE_EQ(r.latency_s, 2 * 0.7e-6);  // two NVLink ports
  }
  const Cluster v = build("node: dgx-2-v100\nnodes: 1\n");
  EXPECT_EQ(v.num_gpus(), 16);
  EXPECT_EQ(kinds(v, v.gpu_route(0, 15))[0], DeviceKind::NvSwitch);
}

TEST(Builders, PcieNodeCrossesTheSocketsForFarPeers) {
  const Cluster c = build("node: pcie-h100\nnodes: 1\n");
  EXPECT_EQ(devices_of(c, DeviceKind::NvSwitch), 0u);
  // GPUs 0,1 share PCIe switch 0: GPU -> switch -> GPU.
  EXPECT_EQ(c.gpu_route(0, 1).links.size(), 2u);
  // GPU 2 is on switch 1, same socket: GPU -> switch0 -> CPU0 -> switch1 -> GPU, no socket link.
  const Route same_socket = c.gpu_route(0, 2);
  EXPECT_EQ(same_socket.links.size(), 4u);
  EXPECT_EQ(count_kind(c, same_socket, LinkKind::CpuInterconnect), 0);
  // GPU 7 is on switch 3 under socket 1: the route crosses the inter-socket link once.
  const Route far = c.gpu_route(0, 7);
  EXPECT_EQ(far.links.size(), 5u);
  EXPECT_EQ(count_kind(c, far, LinkKind::CpuInterconnect), 1);
  EXPECT_DOUBLE_EQ(far.bottleneck_Bps, 63e9);  // PCIe Gen5 x16 < the 100 GB/s socket link
}

TEST(Builders, NvLinkBridgesJoinPairs) {
  const Cluster c = build("node: pcie-h100-nvl\nnodes: 1\n");
  // Group size 2: the bridge carries the GPU's whole NVLink bandwidth to its one peer.
  const Route pair = c.gpu_route(0, 1);
  ASSERT_EQ(pair.links.size(), 1u);
  EXPECT_EQ(c.link(pair.links[0]).kind, LinkKind::NvLink);
  EXPECT_DOUBLE_EQ(pair.bottleneck_Bps, 300e9);
  EXPECT_EQ(count_kind(c, c.gpu_route(0, 2), LinkKind::NvLink), 0);  // no bridge between pairs
}

TEST(Builders, CrossNodeTrafficUsesTheRailNicAndTheLeaf) {
  // 2 nodes x 8 NICs = 16 NIC ports <= radix/2 = 32: one leaf holds both nodes.
  const Cluster c = build("node: dgx-h100\nnodes: 2\nfabric: {topology: fat_tree}\n");
  EXPECT_EQ(switches_of_tier(c, 1), 1u);
  const Route r = c.gpu_route(3, 8 + 3);
  const auto k = kinds(c, r);
  EXPECT_EQ(std::count(k.begin(), k.end(), DeviceKind::Nic), 2);
  EXPECT_EQ(count_tier(c, r, 1), 1);
  EXPECT_EQ(count_tier(c, r, 2), 0);
  EXPECT_EQ(c.device(c.link_target(r.links[1])).name, "node0.nic3");  // GPU 3's rail
  EXPECT_DOUBLE_EQ(r.bottleneck_Bps, 50e9);
  // GPU -> PCIe -> NIC (2x0.5 us), NIC -> leaf -> NIC (2x half the NIC's 0.6 us), then the
  // mirror image: 4 x 0.5 + 0.6 us.
  EXPECT_NEAR(r.latency_s, 4 * 0.5e-6 + 0.6e-6, 1e-15);
}

TEST(Builders, FatTreeCountsAndLeafToLeafRoutes) {
  // 4 nodes x 8 NICs, radix 16: 8 NIC ports per leaf -> 4 leaves (one node each),
  // min(8, 4) = 4 spines; each leaf has one merged link to each spine.
  const Cluster c = build("node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16}\n");
  EXPECT_EQ(switches_of_tier(c, 1), 4u);
  EXPECT_EQ(switches_of_tier(c, 2), 4u);
  EXPECT_EQ(switches_of_tier(c, 3), 0u);
  const size_t node_links = 60;  // DgxNodeDevicesAndLinks
  EXPECT_EQ(c.num_links(), 4 * node_links + 2 * 32 + 2 * 4 * 4);
  const Route r = c.gpu_route(0, 8);  // node 0 (leaf0) -> node 1 (leaf1): leaf, spine, leaf
  EXPECT_EQ(count_tier(c, r, 1), 2);
  EXPECT_EQ(count_tier(c, r, 2), 1);
}

TEST(Builders, RailOptimizedKeepsRailsOnTheirLeaves) {
  // 4 nodes, 8 rails, radix 16: one leaf per rail (4 nodes <= 8 ports), 8 leaves, 8 spines.
  const Cluster c = build("node: dgx-h100\nnodes: 4\nfabric: {topology: rail_optimized, radix: 16}\n");
  EXPECT_EQ(switches_of_tier(c, 1), 8u);
  EXPECT_EQ(switches_of_tier(c, 2), 8u);
  // Same rail (GPU 3 -> GPU 3 of node 2): NIC3 -> leaf of rail 3 -> NIC3, no spine.
  const Route same = c.gpu_route(3, 16 + 3);
  EXPECT_EQ(count_tier(c, same, 1), 1);
  EXPECT_EQ(count_tier(c, same, 2), 0);
  // Different rails (GPU 0 -> GPU 3 of node 2): rail-0 leaf, spine, rail-3 leaf.
  const Route cross = c.gpu_route(0, 16 + 3);
  EXPECT_EQ(count_tier(c, cross, 1), 2);
  EXPECT_EQ(count_tier(c, cross, 2), 1);
  EXPECT_EQ(c.device(c.link_target(cross.links[1])).name, "node0.nic0");
}

TEST(Builders, ThreeTierFabricRoutesAcrossPods) {
  // 8 nodes x 8 NICs, radix 8: 4 ports per leaf -> 16 leaves; pods of 4 leaves -> 4 pods of
  // 4 spines; 4 core groups x 4 cores = 16 cores.
  const Cluster c = build("node: dgx-h100\nnodes: 8\nfabric: {topology: fat_tree, tiers: 3, radix: 8}\n");
  EXPECT_EQ(switches_of_tier(c, 1), 16u);
  EXPECT_EQ(switches_of_tier(c, 2), 16u);
  EXPECT_EQ(switches_of_tier(c, 3), 16u);
  // GPU 0 (node 0, leaf 0, pod 0) -> GPU 63 (node 7, leaf 15, pod 3): leaf, spine, core, spine, leaf.
  const Route far = c.gpu_route(0, 63);
  EXPECT_EQ(count_tier(c, far, 1), 2);
  EXPECT_EQ(count_tier(c, far, 2), 2);
  EXPECT_EQ(count_tier(c, far, 3), 1);
  // GPU 0 -> GPU 8 (node 1, leaf 2, pod 0): stays in the pod.
  const Route near = c.gpu_route(0, 8);
  EXPECT_EQ(count_tier(c, near, 2), 1);
  EXPECT_EQ(count_tier(c, near, 3), 0);
  EXPECT_NO_THROW(c.check_connected());
}

TEST(Builders, EcmpSpreadsKeysOverSpinesDeterministically) {
  // 16 nodes x 8 NICs, radix 16: 16 leaves, 8 spines. With 64 keys hashed uniformly onto 8
  // spines, the expected number of unused spines is 8 (7/8)^64 ~ 0.002: all 8 (allow 7) are used.
  const std::string yaml = "node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 16, routing: ecmp}\n";
  const Cluster c = build(yaml);
  const Cluster again = build(yaml);
  ASSERT_EQ(switches_of_tier(c, 2), 8u);
  std::set<std::string> spines;
  for (uint64_t key = 0; key < 64; ++key) {
    const Route r = c.gpu_route(0, 120, key);
    ASSERT_EQ(count_tier(c, r, 2), 1);
    for (LinkId l : r.links)
      if (c.device(c.link_target(l)).tier == 2) spines.insert(c.device(c.link_target(l)).name);
    EXPECT_EQ(r.links, c.gpu_route(0, 120, key).links);      // same key, same route (cached)
    EXPECT_EQ(r.links, again.gpu_route(0, 120, key).links);  // and on a fresh build
  }
  EXPECT_GE(spines.size(), 7u);
}

TEST(Builders, DestinationRoutingCarriesAShiftPermutationWithoutSharedLinks) {
  // 16 nodes x 8 NICs, radix 16: 16 leaves of 8 ports, 8 spines. Every GPU sends to the same GPU
  // 3 nodes on (a shift permutation: the flows of a ring across nodes). InfiniBand's fat-tree
  // routing (D-mod-K, the default on InfiniBand NICs) picks the up-link by the destination port,
  // and a leaf's 8 ports are distinct modulo 8: no link carries two flows. Hashing (ECMP) the
  // same 128 flows over 8 spines puts two on one up-link somewhere.
  const auto most_flows_on_a_link = [](const std::string& yaml) {
    const Cluster c = build(yaml);
    std::map<LinkId, int> flows;
    int most = 0;
    for (int g = 0; g < 128; ++g)
      for (LinkId l : c.gpu_route(g, (g + 3 * 8) % 128, static_cast<uint64_t>(g)).links)
        if (c.link(l).kind == LinkKind::Network) most = std::max(most, ++flows[l]);
    return most;
  };
  const std::string base = "node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 16";
  EXPECT_TRUE(cfg_of(base + "}\n").fabric.routing.empty());  // by the NIC: InfiniBand -> dmodk
  EXPECT_TRUE(build(base + "}\n").destination_routing());
  EXPECT_EQ(most_flows_on_a_link(base + "}\n"), 1);
  EXPECT_EQ(most_flows_on_a_link(base + ", routing: dmodk}\n"), 1);
  EXPECT_GE(most_flows_on_a_link(base + ", routing: ecmp}\n"), 2);
  // Three tiers (radix 8: 32 leaves of 4 ports in 8 pods): the core choice takes the next digit.
  const std::string three = "node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 8, tiers: 3";
  EXPECT_EQ(most_flows_on_a_link(three + "}\n"), 1);
  EXPECT_GE(most_flows_on_a_link(three + ", routing: ecmp}\n"), 2);
  EXPECT_FALSE(build("node: dgx-h100\nnodes: 16\nnic: roce-400\n").destination_routing());  // Ethernet hashes
  EXPECT_NE(error_of(base + ", routing: adaptive}\n").find("dmodk"), std::string::npos);
}

TEST(Builders, OversubscriptionDividesLeafUplinks) {
  // Leaf uplink bandwidth (all spines together) = radix/2 ports x NIC bandwidth / ratio.
  const Cluster c = build("node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16, oversubscription: 4}\n");
  const DeviceId leaf0 = c.find("leaf0");
  double up = 0, down = 0;
  for (LinkId l = 0; l < c.num_links(); ++l) {
    if (c.link_source(l) != leaf0) continue;
    if (c.device(c.link_target(l)).tier == 2) up += c.link(l).bandwidth_Bps;
    if (c.device(c.link_target(l)).kind == DeviceKind::Nic) down += c.link(l).bandwidth_Bps;
  }
  EXPECT_NEAR(down, 8 * 50e9, 1.0);
  EXPECT_NEAR(up, down / 4, 1.0);
}

TEST(Builders, SpinesAreNotOversubscribed) {
  // Three tiers, radix 8, ratio 2: a leaf sends 4 x 50e9 / 2 = 100 GB/s up over 4 spines; a spine
  // receives 25 GB/s from each of its pod's 4 leaves and sends all 100 GB/s on to its 4 cores.
  const Cluster c =
      build("node: dgx-h100\nnodes: 8\nfabric: {topology: fat_tree, tiers: 3, radix: 8, oversubscription: 2}\n");
  const DeviceId spine0 = c.find("spine0");
  double to_cores = 0;
  for (LinkId l = 0; l < c.num_links(); ++l)
    if (c.link_source(l) == spine0 && c.device(c.link_target(l)).tier == 3) to_cores += c.link(l).bandwidth_Bps;
  EXPECT_NEAR(to_cores, 100e9, 1.0);
}

TEST(Builders, DragonflyGroupsAndTheirGlobalLinks) {
  // 16 DGX H100 nodes = 128 NICs; 8 NICs per switch x 4 switches = 32 NICs per group -> 4 groups
  // of 4 nodes. A group's 4 x 2 = 8 global links are shared by the 3 other groups: floor(8/3) = 2
  // links per pair, merged into one link of 2 x 50 GB/s; 6 pairs.
  const Cluster c = build(
      "node: dgx-h100\nnodes: 16\nfabric: {topology: dragonfly, group_switches: 4, "
      "nics_per_switch: 8, global_links_per_switch: 2}\n");
  EXPECT_EQ(switches_of_tier(c, 1), 4u);
  const size_t node_links = 60;  // DgxNodeDevicesAndLinks
  EXPECT_EQ(c.num_links(), 16 * node_links + 2 * (128 + 6));
  int global = 0;
  for (LinkId l = 0; l < c.num_links(); ++l) {
    const Device &a = c.device(c.link_source(l)), &b = c.device(c.link_target(l));
    if (a.group < 0 || b.group < 0) continue;
    ++global;
    EXPECT_DOUBLE_EQ(c.link(l).bandwidth_Bps, 2 * 50e9);
  }
  EXPECT_EQ(global, 2 * 6);
  // Nodes 0-3 are group 0: node 0 -> node 3 stays in the group switch; node 0 -> node 4 (group 1)
  // takes one global link: NIC, group 0, group 1, NIC.
  EXPECT_EQ(count_tier(c, c.gpu_route(0, 3 * 8), 1), 1);
  const Route far = c.gpu_route(0, 4 * 8);
  EXPECT_EQ(count_tier(c, far, 1), 2);
  EXPECT_EQ(c.device(c.link_target(far.links[2])).name, "group0");
  EXPECT_EQ(c.device(c.link_target(far.links[3])).name, "group1");
  // NIC -> group -> group -> NIC: the NIC's latency plus one switch-to-switch hop.
  EXPECT_NEAR(far.latency_s, 4 * 0.5e-6 + 0.6e-6 + 0.6e-6, 1e-15);
  EXPECT_NO_THROW(c.check_connected());
}

TEST(Builders, DragonflyTrafficBetweenTwoGroupsSharesTheirGlobalLinks) {
  // The 8 rails of node 0 (group 0) send to node 4 (group 1): 8 flows over the 2 global links
  // between the groups, 100 GB/s in all (a fat tree gives each its 50 GB/s); inside a group the
  // same 8 flows (node 0 -> node 1) run at the NICs' rate.
  auto rate = [](const std::string& yaml, int flows, int node = 4) {
    const Cluster c = build(yaml);
    sim::Engine e;
    const std::vector<sim::ResourceId> res = c.bind(e);
    for (int g = 0; g < flows; ++g) {
      sim::ActivitySpec a;
      a.work = 1e9;
      for (LinkId l : c.gpu_route(g, node * 8 + g, static_cast<uint64_t>(g)).links) a.usages.push_back({res[l], 1.0});
      e.start(a, static_cast<uint64_t>(g));
    }
    return flows * 1e9 / e.run().seconds();  // bytes per second of all flows together
  };
  const std::string two =
      "node: dgx-h100\nnodes: 16\nfabric: {topology: dragonfly, group_switches: 4, "
      "nics_per_switch: 8, global_links_per_switch: 2}\n";
  EXPECT_NEAR(rate(two, 8), 2 * 50e9, 1e6);
  EXPECT_NEAR(rate(two, 1), 50e9, 1e6);
  EXPECT_NEAR(rate(two, 8, 1), 8 * 50e9, 1e6);
  EXPECT_NEAR(rate("node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree}\n", 8), 8 * 50e9, 1e6);
}

TEST(Builders, DragonflyBadSizesAreInputErrors) {
  const std::pair<const char*, const char*> bad[] = {
      // 128 NICs, 1 per switch, 2 switches per group: 64 groups, but a group has 2 x 1 global links.
      {"nodes: 16\nfabric: {topology: dragonfly, group_switches: 2, nics_per_switch: 1, global_links_per_switch: 1}",
       "raise global_links_per_switch"},
      {"nodes: 2\nfabric: {topology: dragonfly, radix: 16, group_switches: 16}", "more than its radix"},
      {"nodes: 2\nfabric: {topology: fat_tree, group_switches: 4}", "dragonfly only"},
      {"nodes: 2\nfabric: {topology: dragonfly, oversubscription: 2}", "fat trees only"},
      {"nodes: 1024\nfabric: {topology: dragonfly, radix: 65536, group_switches: 1, nics_per_switch: 1, "
       "global_links_per_switch: 9000}",
       "dragonfly groups"},
      {"nodes: 2\nfabric: {topology: dragonfly, nics_per_switch: 0}", "at least 1"},
  };
  for (const auto& [yaml, fragment] : bad) {
    const std::string e = error_of(std::string("node: dgx-h100\n") + yaml + "\n");
    EXPECT_NE(e.find(fragment), std::string::npos) << yaml << ": " << e;
  }
  EXPECT_EQ(error_of("node: dgx-h100\nnodes: 2\nfabric: {topology: dragonfly, oversubscription: 1}\n"), "");
  // The balanced dragonfly of radix 64: 16 NICs and 16 global links per switch, 32 switches per
  // group (Slingshot's Rosetta: 16 + 31 + 17 of 64 ports).
  const DragonflyShape d = dragonfly_shape(cfg_of("node: dgx-h100\nnodes: 128\nfabric: {topology: dragonfly}\n"));
  EXPECT_EQ(d.a, 32);
  EXPECT_EQ(d.p, 16);
  EXPECT_EQ(d.h, 16);
  EXPECT_EQ(d.groups, 2);  // 1024 NICs / 16 per switch / 32 per group
}

TEST(Builders, TiersDefaultToWhatTheRadixNeeds) {
  // Radix 64: two tiers hold 64 leaves of 32 NIC ports = 2048 NICs = 256 DGX nodes.
  EXPECT_EQ(cfg_of("node: dgx-h100\nnodes: 256\n").fabric.tiers, 2);
  EXPECT_EQ(cfg_of("node: dgx-h100\nnodes: 257\n").fabric.tiers, 3);
  EXPECT_EQ(tiers_needed(64, 64), 2);
  EXPECT_EQ(tiers_needed(65, 64), 3);
  EXPECT_EQ(tiers_needed(64 * 32, 64), 3);  // 64 pods of 32 leaves
  EXPECT_EQ(tiers_needed(64 * 32 + 1, 64), 0);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 257\nfabric: {tiers: 2}\n").find("use tiers: 3"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 300\nfabric: {radix: 8}\n").find("larger radix"), std::string::npos);
}

TEST(Builders, OverridesReachTheResolvedSpecs) {
  const ClusterConfig cfg =
      cfg_of("node: dgx-h100\nnodes: 2\nnics_per_node: 4\nnic: cx6-hdr200\ngpu: H200-SXM-141GB\n");
  EXPECT_EQ(cfg.node.nics, 4);
  EXPECT_EQ(cfg.node.nic, "cx6-hdr200");
  EXPECT_EQ(cfg.nic.generation, "ib-hdr");
  EXPECT_EQ(cfg.gpu, "H200-SXM-141GB");
  EXPECT_EQ(cfg.node.intra_generation, "nvlink4-nvswitch3");
  const Cluster c = build_cluster(cfg);
  // 4 NICs for 8 GPUs: GPU i uses NIC i * 4 / 8.
  EXPECT_EQ(c.device(c.link_target(c.gpu_route(5, 8 + 5).links[1])).name, "node0.nic2");
  EXPECT_DOUBLE_EQ(c.gpu_route(5, 8 + 5).bottleneck_Bps, 25e9);
}

TEST(Builders, SingleSwitchAndStorage) {
  const Cluster c = build("node: dgx-a100\nnodes: 3\nfabric: {topology: single_switch}\n");
  EXPECT_EQ(devices_of(c, DeviceKind::NetworkSwitch), 1u);
  EXPECT_EQ(count_tier(c, c.gpu_route(0, 23), 1), 1);
  // Local NVMe on socket 0: read = storage -> CPU, write = CPU -> storage.
  const Route read = c.route(c.find("node1.nvme"), c.find("node1.cpu0"));
  ASSERT_EQ(read.links.size(), 1u);
  EXPECT_DOUBLE_EQ(read.bottleneck_Bps, 25e9);
  // A CPU reaches another node through a NIC under its own socket.
  const Route cpu = c.route(c.find("node0.cpu1"), c.find("node2.cpu1"));
  EXPECT_EQ(c.device(c.link_target(cpu.links[1])).name, "node0.nic4");
}

TEST(Builders, BindCreatesOneResourcePerDirectedLink) {
  const Cluster c = build("node: dgx-a100\nnodes: 2\n");
  sim::Engine e;
  const auto res = c.bind(e);
  EXPECT_EQ(res.size(), c.num_links());
  EXPECT_EQ(e.num_resources(), c.num_links());
}

TEST(Builders, BadConfigurationsAreInputErrors) {
  EXPECT_NE(error_of("node: dgx-h100\nnodess: 2\n").find("did you mean 'nodes'"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 0\n").find("at least 1"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h99\nnodes: 1\n").find("unknown node"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h10\nnodes: 1\n").find("did you mean 'dgx-h100'"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nnic: cx7-ndr40\n").find("did you mean 'cx7-ndr400'"),
            std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nfabric: {topology: fat_tre}\n").find("did you mean 'fat_tree'"),
            std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nfabric: {oversubscription: 0.5}\n").find("at least 1"),
            std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nfabric: {radix: 7}\n").find("even"), std::string::npos);
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nfabric: {switch_latency: -1 us}\n").find("negative"),
            std::string::npos);
  // Two nodes without NICs would be disconnected.
  EXPECT_NE(error_of("node: dgx-h100\nnodes: 2\nnics_per_node: 0\n").find("needs NICs"), std::string::npos);
  EXPECT_NE(error_of("node: pcie-h100-nvl\nnodes: 1\ngpus_per_node: 3\n").find("NVLink groups"), std::string::npos);
  EXPECT_NE(error_of("node: mi300x-8gpu\nnodes: 1\ngpus_per_node: 4\n").find("Infinity Fabric groups of 8"),
            std::string::npos);
  try {
    cfg_of("node: dgx-h100\nnodes: 2\nfabric:\n  topology: fat_tree\n  radix: 7\n");
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.file(), "test.yaml");
    EXPECT_EQ(e.line(), 5);
  }
}

TEST(Cluster, CopiesAndMovesOutliveTheOriginal) {
  // Link ids index edge descriptors into the graph's storage: a copy or a moved-to cluster must
  // answer from its own graph once the original is gone.
  const std::string yaml = "node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16}\n";
  const Cluster reference = build(yaml);
  auto original = std::make_unique<Cluster>(build(yaml));
  const Cluster copy(*original);
  Cluster assigned;
  assigned = *original;
  const Cluster moved(std::move(*original));
  original.reset();
  for (const Cluster* c : {&copy, const_cast<const Cluster*>(&assigned), &moved}) {
    ASSERT_EQ(c->num_links(), reference.num_links());
    for (LinkId l = 0; l < reference.num_links(); ++l) {
      EXPECT_EQ(c->link_source(l), reference.link_source(l));
      EXPECT_EQ(c->link_target(l), reference.link_target(l));
      EXPECT_EQ(c->link(l).bandwidth_Bps, reference.link(l).bandwidth_Bps);
    }
    EXPECT_EQ(c->gpu_route(0, 31, 5).links, reference.gpu_route(0, 31, 5).links);
    EXPECT_EQ(c->destination_routing(), reference.destination_routing());
  }
}

TEST(Cluster, ZeroBandwidthAndDisconnectedGraphsAreRejected) {
  Cluster c;
  const DeviceId a = c.add_device({DeviceKind::Gpu, "a", 0, 0, 0, false});
  const DeviceId b = c.add_device({DeviceKind::Gpu, "b", 1, 0, 0, false});
  EXPECT_THROW(c.add_duplex(a, b, {LinkKind::NvLink, 0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(c.add_duplex(a, b, {LinkKind::NvLink, 1e9, -1.0}), std::invalid_argument);
  EXPECT_THROW(c.check_connected(), std::runtime_error);
  // Adding a link after routing started invalidates the routing index.
  c.add_duplex(a, b, {LinkKind::NvLink, 1e9, 0.0});
  EXPECT_NO_THROW(c.check_connected());
  EXPECT_EQ(c.gpu_route(0, 1).links.size(), 1u);
}

TEST(Cluster, ArbitraryGraphsRouteByShortestPath) {
  // A ring of 6 switches without tiers: the BFS fallback takes the shorter way round (3 hops
  // either way from 0 to 3; 2 hops from 0 to 4 the other way).
  Cluster c;
  std::vector<DeviceId> s;
  for (int i = 0; i < 6; ++i) {
    std::string name = "s";
    name += std::to_string(i);
    s.push_back(c.add_device({DeviceKind::NetworkSwitch, name, -1, i, 0, false}));
  }
  for (int i = 0; i < 6; ++i) c.add_duplex(s[i], s[(i + 1) % 6], {LinkKind::Network, 1e9, 1e-6});
  EXPECT_EQ(c.route(s[0], s[4]).links.size(), 2u);
  EXPECT_DOUBLE_EQ(c.route(s[0], s[4]).latency_s, 2e-6);
  std::set<DeviceId> middle;
  for (uint64_t key = 0; key < 32; ++key) middle.insert(c.link_target(c.route(s[0], s[3], key).links[0]));
  EXPECT_EQ(middle, (std::set<DeviceId>{s[1], s[5]}));  // both ways round are used
}

TEST(Cluster, ConcurrentRoutingGivesTheSerialAnswer) {
  const Cluster c = build("node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 16}\n");
  const Cluster serial = build("node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 16}\n");
  std::vector<std::vector<LinkId>> got(4 * 128);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 128; ++i) got[t * 128 + i] = c.gpu_route(i, (i * 37 + t) % 128, t).links;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 128; ++i) EXPECT_EQ(got[t * 128 + i], serial.gpu_route(i, (i * 37 + t) % 128, t).links);
}

TEST(Cluster, WithoutGpuDirectRdmaInterNodeRoutesAreStagedThroughTheGpusCpuSocket) {
  auto cpus_on = [](const Cluster& c, const Route& r) {
    int n = 0;
    for (LinkId l : r.links) n += c.device(c.link_target(l)).kind == DeviceKind::Cpu;
    return n;
  };
  const Cluster gdr = build("node: dgx-h100\nnodes: 2\n");
  const Cluster staged = build("node: dgx-h100\nnodes: 2\ngpudirect_rdma: false\n");
  const int peer = 8 + 3;  // GPU 3 of node 1
  EXPECT_EQ(cpus_on(gdr, gdr.gpu_route(3, peer)), 0);
  // Up to the sending GPU's socket and back down to its NIC; the same on the receiving side.
  const Route r = staged.gpu_route(3, peer);
  EXPECT_EQ(cpus_on(staged, r), 2);
  EXPECT_EQ(r.links.size(), gdr.gpu_route(3, peer).links.size() + 4);
  EXPECT_EQ(staged.device(staged.link_target(r.links[1])).name, "node0.cpu0");
  // Inside a node nothing changes.
  EXPECT_EQ(staged.gpu_route(0, 5).links, gdr.gpu_route(0, 5).links);
}
