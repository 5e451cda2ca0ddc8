// Topology builders and routing: device counts, the paths traffic takes, ECMP, oversubscription.
#include <gtest/gtest.h>

#include <set>

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

std::vector<DeviceKind> kinds(const Cluster& c, const Route& r) {
  std::vector<DeviceKind> k;
  for (LinkId l : r.links) k.push_back(c.device(c.link_target(l)).kind);
  return k;
}

}  // namespace

TEST(Catalog, LoadsEveryBundledNodeAndNic) {
  EXPECT_GE(catalog().node_names().size(), 8u);
  EXPECT_EQ(catalog().node("dgx-h100").gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(catalog().node("dgx-h100").intra_bandwidth_Bps, 450e9);
  EXPECT_DOUBLE_EQ(catalog().nic("cx7-ndr400").bandwidth_Bps, 50e9);  // 400 Gb/s
  try {
    catalog().node("dgx-h10");
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'dgx-h100'"), std::string::npos) << e.what();
  }
}

TEST(Builders, DgxNodeRoutesGpuPeersThroughTheNvSwitch) {
  const Cluster c = build_cluster(cfg_of("node: dgx-h100\nnodes: 1\n"));
  EXPECT_EQ(c.num_gpus(), 8);
  const Route r = c.gpu_route(0, 5);
  ASSERT_EQ(r.links.size(), 2u);
  EXPECT_EQ(kinds(c, r)[0], DeviceKind::NvSwitch);
  EXPECT_DOUBLE_EQ(r.bottleneck_Bps, 450e9);
}

TEST(Builders, PcieNodeCrossesTheSocketsForFarPeers) {
  const Cluster c = build_cluster(cfg_of("node: pcie-h100\nnodes: 1\n"));
  // GPUs 0,1 share a PCIe switch: GPU -> switch -> GPU.
  EXPECT_EQ(c.gpu_route(0, 1).links.size(), 2u);
  // GPU 0 (socket 0) to GPU 7 (socket 1): switch, CPU0, CPU1, switch, GPU.
  const auto k = kinds(c, c.gpu_route(0, 7));
  EXPECT_EQ(std::count(k.begin(), k.end(), DeviceKind::Cpu), 2);
}

TEST(Builders, CrossNodeTrafficUsesTheRailNicAndTheFabric) {
  const Cluster c = build_cluster(cfg_of("node: dgx-h100\nnodes: 2\nfabric: {topology: fat_tree}\n"));
  const Route r = c.gpu_route(3, 8 + 3);
  const auto k = kinds(c, r);
  EXPECT_EQ(std::count(k.begin(), k.end(), DeviceKind::Nic), 2);
  EXPECT_EQ(std::count(k.begin(), k.end(), DeviceKind::NetworkSwitch), 1);  // one leaf holds both nodes
  EXPECT_EQ(c.device(c.link_target(r.links[1])).name, "node0.nic3");     // GPU 3's rail
  EXPECT_DOUBLE_EQ(r.bottleneck_Bps, 50e9);
}

TEST(Builders, FatTreeSpreadsFlowsOverSpinesDeterministically) {
  // 16 nodes x 8 NICs = 128 NICs; radix 16 -> 8 NICs per leaf, 16 leaves, 8 spines.
  const Cluster c = build_cluster(cfg_of("node: dgx-h100\nnodes: 16\nfabric: {topology: fat_tree, radix: 16}\n"));
  std::set<std::string> spines;
  for (uint64_t key = 0; key < 64; ++key) {
    const Route r = c.gpu_route(0, 120, key);
    for (LinkId l : r.links)
      if (c.device(c.link_target(l)).tier == 2) spines.insert(c.device(c.link_target(l)).name);
    EXPECT_EQ(r.links, c.gpu_route(0, 120, key).links);  // same key, same route
  }
  EXPECT_GE(spines.size(), 6u);  // ECMP uses most of the 8 spines
}

TEST(Builders, OversubscriptionDividesLeafUplinks) {
  // Leaf uplink bandwidth (all spines together) = radix/2 * NIC bandwidth / ratio.
  const ClusterConfig cfg = cfg_of("node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16, oversubscription: 4}\n");
  const Cluster c = build_cluster(cfg);
  double up = 0;
  const DeviceId leaf0 = c.find("leaf0");
  for (LinkId l = 0; l < c.num_links(); ++l)
    if (c.link_source(l) == leaf0 && c.device(c.link_target(l)).tier == 2) up += c.link(l).bandwidth_Bps;
  EXPECT_NEAR(up, 8 * 50e9 / 4, 1.0);
}

TEST(Builders, ThreeTierFabricRoutesAcrossPods) {
  const Cluster c = build_cluster(cfg_of("node: dgx-h100\nnodes: 8\nfabric: {topology: fat_tree, tiers: 3, radix: 8}\n"));
  const auto k = kinds(c, c.gpu_route(0, 63));
  bool core = false;
  for (LinkId l : c.gpu_route(0, 63).links) core = core || c.device(c.link_target(l)).tier == 3;
  EXPECT_TRUE(core);
  EXPECT_NO_THROW(c.check_connected());
}

TEST(Builders, BindCreatesOneResourcePerDirectedLink) {
  const Cluster c = build_cluster(cfg_of("node: dgx-a100\nnodes: 2\n"));
  sim::Engine e;
  const auto res = c.bind(e);
  EXPECT_EQ(res.size(), c.num_links());
  EXPECT_EQ(e.num_resources(), c.num_links());
}

TEST(Builders, BadConfigurationsAreInputErrors) {
  auto msg = [](const std::string& y) {
    try {
      cfg_of(y);
    } catch (const config::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg("node: dgx-h100\nnodess: 2\n").find("did you mean 'nodes'"), std::string::npos);
  EXPECT_NE(msg("node: dgx-h100\nnodes: 0\n").find("at least 1"), std::string::npos);
  EXPECT_NE(msg("node: dgx-h99\nnodes: 1\n").find("unknown node"), std::string::npos);
  EXPECT_NE(msg("node: dgx-h100\nnodes: 2\nfabric: {topology: torus}\n").find("unknown fabric topology"),
            std::string::npos);
  EXPECT_NE(msg("node: dgx-h100\nnodes: 2\nfabric: {oversubscription: 0.5}\n").find("at least 1"), std::string::npos);
}

TEST(Cluster, ZeroBandwidthAndDisconnectedGraphsAreRejected) {
  Cluster c;
  const DeviceId a = c.add_device({DeviceKind::Gpu, "a", 0, 0, 0, false});
  const DeviceId b = c.add_device({DeviceKind::Gpu, "b", 0, 1, 0, false});
  EXPECT_THROW(c.add_duplex(a, b, {LinkKind::NvLink, 0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(c.check_connected(), std::runtime_error);
}
