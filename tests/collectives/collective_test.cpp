// Collectives as flows, against closed forms.
#include <gtest/gtest.h>

#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/builders.hpp"

using namespace stacksim;
using namespace stacksim::coll;

namespace {

// n GPUs on one ideal switch, links of bandwidth B per direction, no latency.
topo::Cluster star(int n, double B) {
  topo::Cluster c;
  const auto sw = c.add_device({topo::DeviceKind::NvSwitch, "sw", 0, 0, 0, false});
  for (int i = 0; i < n; ++i) {
    const auto g = c.add_device({topo::DeviceKind::Gpu, "g" + std::to_string(i), 0, i, 0, false});
    c.add_duplex(g, sw, {topo::LinkKind::NvLink, B, 0.0});
  }
  c.set_shape(1, n);
  return c;
}

CommTuning ideal(double latency = 0) {
  CommTuning t;
  t.protocols = {{"Simple", latency, 0, 1.0}};
  return t;
}

Collective all_reduce(int n, double S, Algorithm a = Algorithm::Ring) {
  Collective c;
  c.op = CollectiveOp::AllReduce;
  c.bytes = S;
  c.algorithm = a;
  for (int i = 0; i < n; ++i) c.ranks.push_back(i);
  return c;
}

const hw::NodeCatalog& nodes() {
  static const hw::NodeCatalog c = hw::NodeCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

topo::ClusterConfig cfg(const std::string& y) {
  return topo::parse_cluster_config(config::Node::load_string(y, "t.yaml"), nodes());
}

}  // namespace

TEST(Collectives, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::Broadcast, 4), 1.0);
}

TEST(Collectives, RingAllReduceClosedForm) {
  // t = 2(n-1)/n * S / B (+ the call latency alpha); busbw = B.
  const int n = 8;
  const double S = 1e9, B = 100e9;
  const topo::Cluster c = star(n, B);
  const CollectiveTiming t = time_collective(c, ideal(), all_reduce(n, S));
  EXPECT_NEAR(t.seconds, 2.0 * (n - 1) / n * S / B, 1e-9);
  EXPECT_NEAR(t.busbw_Bps, B, B * 1e-9);
  const CollectiveTiming tl = time_collective(c, ideal(20e-6), all_reduce(n, S));
  EXPECT_NEAR(tl.seconds - t.seconds, 20e-6, 1e-9);
}

TEST(Collectives, ReduceScatterAndAllGatherMoveHalfTheAllReduceVolume) {
  const topo::Cluster c = star(4, 50e9);
  Collective rs = all_reduce(4, 1e9);
  rs.op = CollectiveOp::ReduceScatter;
  EXPECT_NEAR(time_collective(c, ideal(), rs).seconds, 3.0 / 4 * 1e9 / 50e9, 1e-9);
  rs.op = CollectiveOp::AllToAll;  // each rank sends S/n to each of n-1 peers over its one port
  EXPECT_NEAR(time_collective(c, ideal(), rs).seconds, 3.0 / 4 * 1e9 / 50e9, 1e-9);
}

TEST(Collectives, TwoNodeRingIsLimitedByTheNics) {
  // DGX A100 x2, ring: every NIC carries one channel of V/8 with V = 2(n-1)/n S, n = 16, at the
  // NIC rate x network efficiency (0.96): busbw = 8 NICs x 25 GB/s x 0.96 = 192 GB/s.
  const topo::ClusterConfig k = cfg("node: dgx-a100\nnodes: 2\n");
  const topo::Cluster c = topo::build_cluster(k);
  const CollectiveTiming t = time_collective(c, tuning_for(k.node, k.nic), all_reduce(16, 8e9));
  EXPECT_NEAR(t.busbw_Bps / 1e9, 192.0, 192.0 * 0.02);
}

TEST(Collectives, OversubscribedFabricSlowsCrossLeafTraffic) {
  // 4 nodes, radix 16 (8 NICs per leaf = one node per leaf): every ring crossing leaves the leaf.
  // With oversubscription 4 the leaf uplinks carry a quarter of the NICs' bandwidth.
  auto busbw = [](const std::string& ratio) {
    const topo::ClusterConfig k =
        cfg("node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16, oversubscription: " + ratio + "}\n");
    const topo::Cluster c = topo::build_cluster(k);
    return time_collective(c, tuning_for(k.node, k.nic), all_reduce(32, 4e9)).busbw_Bps;
  };
  const double full = busbw("1"), over = busbw("4");
  EXPECT_NEAR(full / over, 4.0 / 0.94, 0.5);  // leaf uplink 100 GB/s vs NICs 8 x 47 GB/s
}

TEST(Collectives, NvlsBeatsTheRingOnAnH100Node) {
  const topo::ClusterConfig k = cfg("node: dgx-h100\nnodes: 1\n");
  const topo::Cluster c = topo::build_cluster(k);
  const CommTuning t = tuning_for(k.node, k.nic);
  const auto ring = time_collective(c, t, all_reduce(8, 8e9, Algorithm::Ring));
  const auto nvls = time_collective(c, t, all_reduce(8, 8e9, Algorithm::InSwitch));
  const auto aut = time_collective(c, t, all_reduce(8, 8e9, Algorithm::Auto));
  EXPECT_NEAR(ring.busbw_Bps / 1e9, 450 * 0.82, 5);   // NCCL maintainers: ~370 GB/s
  EXPECT_NEAR(nvls.busbw_Bps / 1e9, 480, 10);         // ~480 GB/s
  EXPECT_EQ(aut.algorithm, Algorithm::InSwitch);
  // A100 NVSwitch has no in-switch reduction.
  const topo::ClusterConfig a = cfg("node: dgx-a100\nnodes: 1\n");
  EXPECT_THROW(time_collective(topo::build_cluster(a), tuning_for(a.node, a.nic), all_reduce(8, 1e9, Algorithm::InSwitch)),
               std::invalid_argument);
}

TEST(Collectives, HierarchicalAllReduceRunsThreePhases) {
  const topo::ClusterConfig k = cfg("node: dgx-h100\nnodes: 2\n");
  const topo::Cluster c = topo::build_cluster(k);
  const auto h = time_collective(c, tuning_for(k.node, k.nic), all_reduce(16, 1e9, Algorithm::Hierarchical));
  EXPECT_EQ(h.algorithm, Algorithm::Hierarchical);
  EXPECT_GT(h.seconds, 0);
}

TEST(Collectives, MissingGpuIsAnError) {
  const topo::Cluster c = star(4, 1e9);
  Collective x = all_reduce(4, 1e6);
  x.ranks.push_back(9);
  EXPECT_THROW(time_collective(c, ideal(), x), std::invalid_argument);
}

TEST(Collectives, Deterministic) {
  const topo::ClusterConfig k = cfg("node: dgx-h100\nnodes: 4\n");
  const topo::Cluster c = topo::build_cluster(k);
  const auto t = tuning_for(k.node, k.nic);
  EXPECT_EQ(time_collective(c, t, all_reduce(32, 3e8)).seconds, time_collective(c, t, all_reduce(32, 3e8)).seconds);
}
