// Collectives as flows, against closed forms stated in each test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/error.hpp"
#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"
#include "sim/engine.hpp"
#include "topologies/builders.hpp"

using namespace stacksim;
using namespace stacksim::coll;

namespace {

// n GPUs on one ideal switch, links of bandwidth B per direction, no latency. GPU i belongs to
// node i / gpus_per_node (so the same star can stand for several "nodes" on a flat network).
topo::Cluster star(int n, double B, int gpus_per_node = 0) {
  if (gpus_per_node == 0) gpus_per_node = n;
  topo::Cluster c;
  const auto sw = c.add_device({topo::DeviceKind::NvSwitch, "sw", -1, 0, 0, false});
  for (int i = 0; i < n; ++i) {
    const auto g =
        c.add_device({topo::DeviceKind::Gpu, "g" + std::to_string(i), i / gpus_per_node, i % gpus_per_node, 0, false});
    c.add_duplex(g, sw, {topo::LinkKind::NvLink, B, 0.0});
  }
  c.set_shape(n / gpus_per_node, gpus_per_node);
  return c;
}

// One Simple-like protocol: efficiency 1, per-call latency, per-step latencies alpha (inside a
// node) and beta (across nodes).
CommTuning ideal(double call = 0, double alpha = 0, double beta = 0) {
  CommTuning t;
  t.protocols = {{"Simple", call, 0, 1.0, alpha, beta}};
  return t;
}

Collective make(CollectiveOp op, int n, double S, Algorithm a = Algorithm::Ring) {
  Collective c;
  c.op = op;
  c.bytes = S;
  c.algorithm = a;
  for (int i = 0; i < n; ++i) c.ranks.push_back(i);
  return c;
}

Collective all_reduce(int n, double S, Algorithm a = Algorithm::Ring) { return make(CollectiveOp::AllReduce, n, S, a); }

const hw::NodeCatalog& nodes() {
  static const hw::NodeCatalog c = hw::NodeCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

topo::ClusterConfig cfg(const std::string& y) {
  return topo::parse_cluster_config(config::Node::load_string(y, "t.yaml"), nodes());
}

// A catalogue cluster with the NCCL tuning of its node and NIC.
struct Built {
  topo::ClusterConfig cfg;
  topo::Cluster cluster;
  CommTuning tuning;
};
Built built(const std::string& yaml) {
  topo::ClusterConfig k = cfg(yaml);
  topo::Cluster c = topo::build_cluster(k);
  const CommTuning t = tuning_for(k.node, k.nic);
  return {std::move(k), std::move(c), t};
}

}  // namespace

TEST(Collectives, BusFactorsAreNcclTests) {
  // nccl-tests PERFORMANCE.md: all-reduce 2(n-1)/n, RS/AG/all-to-all (n-1)/n, broadcast 1.
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::ReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::AllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::Broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::SendRecv, 2), 1.0);
}

TEST(Collectives, RingAllReduceClosedForm) {
  // t = 2(n-1)/n * S / B, so busbw = B; with a call latency L and a step latency alpha,
  // t = L + 2(n-1) alpha + 2(n-1)/n * S / B.
  const int n = 8;
  const double S = 1e9, B = 100e9, L = 5e-6, alpha = 2e-6;
  const topo::Cluster c = star(n, B);
  const CollectiveTiming t = time_collective(c, ideal(), all_reduce(n, S));
  EXPECT_NEAR(t.seconds, 2.0 * (n - 1) / n * S / B, 1e-9);
  EXPECT_NEAR(t.busbw_Bps, B, B * 1e-6);
  const CollectiveTiming tl = time_collective(c, ideal(L, alpha), all_reduce(n, S));
  EXPECT_NEAR(tl.seconds - t.seconds, L + 2 * (n - 1) * alpha, 1e-9);
}

TEST(Collectives, ReduceScatterAllGatherAllToAllBroadcastVolumes) {
  // RS and AG: (n-1)/n S per rank over one port; all-to-all: S/n to each of n-1 peers over the
  // same port, also (n-1)/n S; broadcast: a chain moving S over each hop, plus (n-1) steps.
  const int n = 4;
  const double S = 1e9, B = 50e9, alpha = 1e-6;
  const topo::Cluster c = star(n, B);
  for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather, CollectiveOp::AllToAll})
    EXPECT_NEAR(time_collective(c, ideal(), make(op, n, S)).seconds, 3.0 / 4 * S / B, 1e-9) << op_name(op);
  EXPECT_NEAR(time_collective(c, ideal(0, alpha), make(CollectiveOp::Broadcast, n, S)).seconds, S / B + (n - 1) * alpha,
              1e-9);
  Collective p2p = make(CollectiveOp::SendRecv, 2, S);
  p2p.peer = 1;
  EXPECT_NEAR(time_collective(c, ideal(0, alpha), p2p).seconds, S / B + alpha, 1e-9);
}

TEST(Collectives, TheSizeRampFollowsEachRanksSharePerPeer) {
  // The ramp (NCCL's channels and pipelining) grows with the share of a rank's buffer per peer:
  // S/n for an all-reduce, S for a send. With a ramp from 1/2 at a 1 MB share to 1 at 16 MB, an
  // 8-GPU all-reduce of 8 MB (1 MB shares) runs at half the link, a 4-GPU one of 4 MB too, a 2-GPU
  // one of 32 MB (16 MB shares) at the full link, and a 1 MB send at half.
  const double B = 100e9;
  const topo::Cluster c = star(8, B);
  CommTuning t = ideal();
  t.ramp_start_bytes = 1e6;
  t.ramp_end_bytes = 16e6;
  t.ramp_start_fraction = 0.5;
  const auto ring_s = [](int n, double S, double rate) { return 2.0 * (n - 1) / n * S / rate; };
  EXPECT_NEAR(time_collective(c, t, all_reduce(8, 8e6)).seconds, ring_s(8, 8e6, B / 2), 1e-9);
  EXPECT_NEAR(time_collective(c, t, all_reduce(4, 4e6)).seconds, ring_s(4, 4e6, B / 2), 1e-9);
  EXPECT_NEAR(time_collective(c, t, all_reduce(2, 32e6)).seconds, ring_s(2, 32e6, B), 1e-9);
  // Halfway in log2 between the ends (a 4 MB share): three quarters of the link.
  EXPECT_NEAR(time_collective(c, t, all_reduce(8, 32e6)).seconds, ring_s(8, 32e6, 0.75 * B), 1e-9);
  Collective p2p = make(CollectiveOp::SendRecv, 2, 1e6);
  p2p.peer = 1;
  EXPECT_NEAR(time_collective(c, t, p2p).seconds, 1e6 / (B / 2), 1e-9);
}

TEST(Collectives, AllToAllAcrossNodesIsNicBound) {
  // 2 DGX H100: every GPU sends S (n-g)/n = S/2 to the other node through its own NIC at
  // 50 GB/s x 0.94 (ib-ndr); NVLink carries the rest far faster. t = S/2 / 47 GB/s (+ latency).
  const auto [k, c, t] = built("node: dgx-h100\nnodes: 2\n");
  const double S = 4e9;
  const double expected = S / 2 / (k.nic.bandwidth_Bps * t.network_efficiency);
  EXPECT_NEAR(time_collective(c, t, make(CollectiveOp::AllToAll, 16, S)).seconds, expected, expected * 0.01);
}

TEST(Collectives, AGpuWithSeveralNicsStripesOverThem) {
  // 2 DGX H100 with 100 Gb/s NICs: with 32 per node each GPU owns four and NCCL stripes its
  // channels over them (AWS p5's layout), so the NIC-bound all-to-all runs 4x as fast as with one
  // NIC per GPU: t = S/2 / (4 x 12.5 GB/s x efficiency), still under the GPU's PCIe x16 link.
  const topo::ClusterConfig one = cfg("node: dgx-h100\nnodes: 2\nnic: cx5-edr100\n");
  const topo::ClusterConfig four = cfg("node: dgx-h100\nnodes: 2\nnic: cx5-edr100\nnics_per_node: 32\n");
  const CommTuning t = tuning_for(one.node, one.nic);
  const double S = 4e9;
  const double t1 = time_collective(topo::build_cluster(one), t, make(CollectiveOp::AllToAll, 16, S)).seconds;
  const double t4 = time_collective(topo::build_cluster(four), t, make(CollectiveOp::AllToAll, 16, S)).seconds;
  EXPECT_NEAR(t4, S / 2 / (4 * one.nic.bandwidth_Bps * t.network_efficiency), 0.02 * t4);
  EXPECT_NEAR(t1 / t4, 4.0, 0.1);
  EXPECT_EQ(topo::build_cluster(four).gpu_gateway_count(3), 4);
  EXPECT_EQ(topo::build_cluster(one).gpu_gateway_count(3), 1);
}

TEST(Collectives, NodeDeduplicatedDispatchSendsEachTokenOncePerNode) {
  // DeepEP-style dispatch of top-8 copies over 4 DGX H100: a remote node receives a token when any
  // of its 8 experts is there (1 - (3/4)^8 of them) instead of 8/4 copies: the NIC-bound time
  // shrinks by 4 (1 - 0.75^8) / 8 = 0.45.
  const auto [k, c, t] = built("node: dgx-h100\nnodes: 4\n");
  const double S = 4e9;
  Collective plain = make(CollectiveOp::AllToAll, 32, S);
  Collective dedup = plain;
  dedup.dispatch.top_k = 8;
  const double t_plain = time_collective(c, t, plain).seconds;
  const double expected = S * 3 / 4 * (4 * (1 - std::pow(0.75, 8)) / 8) / (k.nic.bandwidth_Bps * t.network_efficiency);
  EXPECT_NEAR(time_collective(c, t, dedup).seconds, expected, expected * 0.02);
  EXPECT_LT(time_collective(c, t, dedup).seconds, 0.5 * t_plain);
  // Group-limited routing (DeepSeek-V3: 8 groups, 4 per token; here 8 groups over 4 nodes, 2 per
  // node, 2 per token): a node is missed when both of the token's groups avoid its two,
  // C(6,2)/C(8,2) = 15/28, so 4 (1 - 15/28) = 1.86 nodes instead of 4 (1 - 0.75^8) = 3.6.
  Collective limited = dedup;
  limited.dispatch.groups = 8;
  limited.dispatch.groups_per_token = 2;
  EXPECT_NEAR(moe_nodes_per_token(limited.dispatch, 4), 4 * (1 - 15.0 / 28), 1e-12);
  EXPECT_NEAR(time_collective(c, t, limited).seconds / time_collective(c, t, dedup).seconds,
              (4 * (1 - 15.0 / 28)) / (4 * (1 - std::pow(0.75, 8))), 0.02);
  limited.dispatch.groups_per_token = 8;  // every group allowed: no limit
  EXPECT_DOUBLE_EQ(moe_nodes_per_token(limited.dispatch, 4), moe_nodes_per_token(dedup.dispatch, 4));
  // One expert per token leaves nothing to deduplicate.
  dedup.dispatch.top_k = 1;
  EXPECT_DOUBLE_EQ(time_collective(c, t, dedup).seconds, t_plain);
}

TEST(Collectives, TwoNodeRingIsLimitedByTheNics) {
  // DGX A100 x2, ring: every NIC carries one channel of V/8 with V = 2(n-1)/n S, n = 16, at the
  // NIC rate x network efficiency (0.96): busbw = 8 NICs x 25 GB/s x 0.96 = 192 GB/s (latency
  // is < 0.5% of the time at 8 GB).
  const Built b = built("node: dgx-a100\nnodes: 2\n");
  const CollectiveTiming t = time_collective(b.cluster, b.tuning, all_reduce(16, 8e9));
  EXPECT_NEAR(t.busbw_Bps / 1e9, 8 * 25 * 0.96, 192.0 * 0.005);
}

TEST(Collectives, Nvl72KeepsA64GpuRingOnNvlink) {
  // 64 GPUs as 8 DGX B200 cross the NICs (8 x 50 GB/s per node: ~370 GB/s busbw), in one GB200
  // NVL72 rack they stay on NVLink (900 GB/s per GPU, ~75 % of it for a ring).
  const auto busbw = [](const std::string& node) {
    const Built b = built("node: " + node + "\nnodes: " + (node == "dgx-b200" ? "8" : "1") + "\n");
    return time_collective(b.cluster, b.tuning, make(CollectiveOp::AllGather, 64, 8e9)).busbw_Bps;
  };
  const double rack = busbw("gb200-nvl72"), nodes = busbw("dgx-b200");
  EXPECT_GT(rack, 1.5 * nodes);
  EXPECT_LT(nodes, 8 * 50e9);
  EXPECT_LT(rack, 900e9);  // never above the NVLink port
}

TEST(Collectives, OversubscribedFabricSlowsCrossLeafTraffic) {
  // 4 nodes, radix 16: one node per leaf, so every ring channel leaves its leaf. Each leaf's 8
  // channels (one per NIC) share the leaf's uplinks: 8 x 50 GB/s at ratio 1 (NIC-bound), a quarter
  // of that at ratio 4. Both are limited by links scaled by the same network efficiency, so the
  // slow-down is the ratio, 4.
  auto busbw = [](const std::string& ratio) {
    const Built b = built(
        "node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16, "
        "oversubscription: " +
        ratio + "}\n");
    return time_collective(b.cluster, b.tuning, all_reduce(32, 4e9)).busbw_Bps;
  };
  EXPECT_NEAR(busbw("1") / busbw("4"), 4.0, 0.04);
}

TEST(Collectives, NvlsBeatsTheRingOnAnH100Node) {
  // NCCL maintainers (specs.yaml NCCLT_212): ring ~370 GB/s busbw (0.82 x 450), NVLS ~480.
  const auto [k, c, t] = built("node: dgx-h100\nnodes: 1\n");
  const auto ring = time_collective(c, t, all_reduce(8, 8e9, Algorithm::Ring));
  const auto nvls = time_collective(c, t, all_reduce(8, 8e9, Algorithm::InSwitch));
  const auto aut = time_collective(c, t, all_reduce(8, 8e9, Algorithm::Auto));
  EXPECT_NEAR(ring.busbw_Bps / 1e9, 450 * 0.82, 5);
  EXPECT_NEAR(nvls.busbw_Bps / 1e9, 480, 10);
  EXPECT_EQ(aut.algorithm, Algorithm::InSwitch);
  // Small messages: LL's latency wins over NVLS (Azure ND H100 v5 curve, LL below ~64 KiB).
  const auto small = time_collective(c, t, all_reduce(8, 4096, Algorithm::Auto));
  EXPECT_EQ(small.protocol, "LL");
  // A100's NVSwitch has no in-switch reduction.
  const topo::ClusterConfig a = cfg("node: dgx-a100\nnodes: 1\n");
  EXPECT_THROW(
      time_collective(topo::build_cluster(a), tuning_for(a.node, a.nic), all_reduce(8, 1e9, Algorithm::InSwitch)),
      std::invalid_argument);
}

TEST(Collectives, NvlsTreeAcrossTwoH100NodesIsBoundByTheSwitchNotTheNics) {
  // NCCL's NVLSTree on 2 DGX H100: in-switch reduction inside each node (~480 GB/s busbw alone)
  // pipelined with a tree over the 8 rails, each carrying S/8 each way at 400 Gb/s; the network
  // alone would allow 8 x 47 GB/s x 2(n-1)/n = 705 GB/s busbw, so the switch bounds it, above the
  // ring's NIC limit (8 x 47 GB/s = 376). Measured 440-487 GB/s (CoreWeave, SkyPilot/Together).
  const auto [k, c, t] = built("node: dgx-h100\nnodes: 2\n");
  const auto tree = time_collective(c, t, all_reduce(16, 8e9, Algorithm::InSwitchTree));
  const auto ring = time_collective(c, t, all_reduce(16, 8e9, Algorithm::Ring));
  const auto one_node = time_collective(topo::build_cluster(cfg("node: dgx-h100\nnodes: 1\n")), t,
                                        all_reduce(8, 8e9, Algorithm::InSwitch));
  EXPECT_NEAR(ring.busbw_Bps / 1e9, 376, 10);
  // Same algbw as one node's NVLS (the switch is the bottleneck), busbw scaled by 2(n-1)/n.
  EXPECT_NEAR(tree.algbw_Bps / one_node.algbw_Bps, 1.0, 0.02);
  EXPECT_GT(tree.busbw_Bps, 1.3 * ring.busbw_Bps);
  EXPECT_EQ(time_collective(c, t, all_reduce(16, 8e9, Algorithm::Auto)).algorithm, Algorithm::InSwitchTree);
  // It needs in-switch reduction in every node.
  const topo::ClusterConfig a = cfg("node: dgx-a100\nnodes: 2\n");
  EXPECT_THROW(
      time_collective(topo::build_cluster(a), tuning_for(a.node, a.nic), all_reduce(16, 1e9, Algorithm::InSwitchTree)),
      std::invalid_argument);
}

TEST(Collectives, TreeLatencyGrowsWithLog2OfNodes) {
  // 8 "nodes" of 4 GPUs on a flat ideal network, zero bytes: the ring pays 2(n-1) steps, 2(N-1)
  // of them across nodes; the tree 2(g-1) intra steps and 2 log2(N) network steps.
  const int N = 8, g = 4, n = N * g;
  const double L = 3e-6, alpha = 1e-6, beta = 10e-6;
  const topo::Cluster c = star(n, 10e9, g);
  const CommTuning t = ideal(L, alpha, beta);
  const double ring = time_collective(c, t, all_reduce(n, 0, Algorithm::Ring)).seconds;
  const double tree = time_collective(c, t, all_reduce(n, 0, Algorithm::Tree)).seconds;
  EXPECT_NEAR(ring, L + (2 * (n - 1) - 2 * (N - 1)) * alpha + 2 * (N - 1) * beta, 1e-9);
  EXPECT_NEAR(tree, L + 2 * (g - 1) * alpha + 2 * 3 * beta, 1e-9);
  const auto aut = time_collective(c, t, all_reduce(n, 1024, Algorithm::Auto));
  EXPECT_EQ(aut.algorithm, Algorithm::Tree);
}

TEST(Collectives, RingAllGatherAtScalePaysOneStepPerRank) {
  // A ZeRO-3/FSDP parameter gather over n = N x g ranks: t = (n-1)/n x S / B + L + (n-N) alpha +
  // (N-1) beta (one ring step per rank, N-1 of them across nodes). At 1,024 ranks the latency
  // terms dwarf a small (per-module) gather's transfer: the cost that grows with the ring.
  const double B = 50e9, L = 8e-6, alpha = 2e-6, beta = 10e-6;
  const CommTuning t = ideal(L, alpha, beta);
  for (const auto& [N, g] : {std::pair{2, 4}, {16, 8}, {128, 8}}) {
    const int n = N * g;
    const topo::Cluster c = star(n, B, g);
    for (const double S : {1e6, 1e9}) {
      const double want = (n - 1.0) / n * S / B + L + (n - N) * alpha + (N - 1) * beta;
      EXPECT_NEAR(time_collective(c, t, make(CollectiveOp::AllGather, n, S)).seconds, want, 1e-9 + 1e-9 * want)
          << n << " ranks, " << S << " B";
    }
  }
  // 1 MB over 1,024 ranks: 20 us of transfer, 2.8 ms of steps.
  const topo::Cluster big = star(1024, B, 8);
  EXPECT_GT(time_collective(big, t, make(CollectiveOp::AllGather, 1024, 1e6)).seconds, 100 * 1e6 / B);
}

TEST(Collectives, TreeAndHierarchicalMoveTheAllReduceVolume) {
  // Tree, 4 nodes of 1 GPU on a flat network (link B, no latency): each tree edge carries S/2 each
  // way. NCCL's btree over 0..3 has edges 1-2, 0-2, 3-2; the mirrored tree 2-1, 1-3, 0-1, so
  // nodes 1 and 2 have 4 edges and send (and receive) 4 x S/2 through their one port: t = 2 S/B.
  const double S = 1e9, B = 10e9;
  EXPECT_NEAR(time_collective(star(4, B, 1), ideal(), all_reduce(4, S, Algorithm::Tree)).seconds, 2 * S / B, 1e-6);
  // Hierarchical, 4 nodes x 2 GPUs: RS (g-1)/g S, then a ring all-reduce of S/g per rail over N
  // nodes, 2(N-1)/N S/g, then AG (g-1)/g S: t = 2 (g-1)/g S/B + 2 (N-1)/N S/(g B).
  const int N = 4, g = 2;
  EXPECT_NEAR(time_collective(star(N * g, B, g), ideal(), all_reduce(N * g, S, Algorithm::Hierarchical)).seconds,
              2.0 * (g - 1) / g * S / B + 2.0 * (N - 1) / N * S / (g * B), 1e-6);
}

TEST(Collectives, SingleNodeGroupsCannotRunTreeOrHierarchical) {
  const topo::Cluster c = star(4, 1e9);
  EXPECT_THROW(time_collective(c, ideal(), all_reduce(4, 1e6, Algorithm::Tree)), std::invalid_argument);
  EXPECT_THROW(time_collective(c, ideal(), make(CollectiveOp::AllGather, 4, 1e6, Algorithm::Tree)),
               std::invalid_argument);
}

TEST(Collectives, CommunicationTakesSmsFromOverlappedCompute) {
  // A compute kernel of T seconds on GPU 0 and a ring all-reduce of nominal time C = T on the
  // same GPUs, kernels taking a fraction f of the SMs: max-min gives both the level 1/(1+f)
  // while they overlap, so both end at T (1 + f). Without the GPU resources the collective
  // ignores the kernel: the makespan is T.
  const int n = 4;
  const double B = 10e9, f = 0.25;
  const double S = 1e9, C = 2.0 * (n - 1) / n * S / B;
  const topo::Cluster c = star(n, B);
  CommTuning t = ideal();
  t.sm_fraction = f;
  for (bool share : {true, false}) {
    sim::Engine engine;
    const auto links = c.bind(engine);
    std::vector<sim::ResourceId> gpus;
    for (int i = 0; i < n; ++i) gpus.push_back(engine.add_resource({"gpu" + std::to_string(i), 1.0}));
    sim::TaskGraph g;
    sim::TaskSpec kernel;
    kernel.activity.work = C;
    kernel.activity.usages = {{gpus[0], 1.0}};
    g.add(kernel);
    append_collective(g, c, links, t, all_reduce(n, S), {}, 0, sim::kNoTrack, share ? &gpus : nullptr);
    const auto r = sim::execute(engine, g);
    EXPECT_NEAR(r.makespan.seconds(), share ? C * (1 + f) : C, 1e-9) << share;
  }
}

TEST(Collectives, TuningComesFromTheYamlTables) {
  const topo::ClusterConfig k = cfg("node: dgx-h100\nnodes: 2\n");
  const CommTuning t = tuning_for(k.node, k.nic);
  EXPECT_EQ(t.intra_generation, "nvlink4-nvswitch3");
  EXPECT_EQ(t.nic_generation, "ib-ndr");
  EXPECT_DOUBLE_EQ(t.nvls_efficiency, 0.61);  // NCCLT_212: 275 / 450
  ASSERT_EQ(t.protocols.size(), 2u);
  EXPECT_EQ(t.protocols[1].name, "Simple");
  EXPECT_DOUBLE_EQ(t.protocols[1].efficiency, 0.82);  // NCCLT_212: 370 / 450
  EXPECT_NEAR(t.protocols[1].network_step_latency_s, 9.6e-6, 1e-12);
  // A number without a source is an input error naming the key.
  const auto dir = std::filesystem::temp_directory_path() / "stacksim_tuning_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "intra_node.yaml")
      << "format: stacksim-collective-tuning/1\ngenerations:\n  x:\n    protocols:\n      Simple:\n"
         "        latency: {value: 1 us}\n";
  std::ofstream(dir / "network.yaml")
      << "format: stacksim-collective-tuning/1\nstep_latency: {Simple: {value: 1 us, source: s}}\n"
         "generations: {y: {efficiency: {value: 0.9, source: s}}}\n";
  try {
    load_tuning(dir.string(), "x", "y", false);
    FAIL() << "expected an InputError";
  } catch (const config::InputError& e) {
    EXPECT_NE(e.key().find("latency.source"), std::string::npos) << e.key();
  }
  EXPECT_THROW(load_tuning(dir.string(), "nope", "y", false), config::InputError);
}

TEST(Collectives, BadGroupsAreErrors) {
  const topo::Cluster c = star(4, 1e9);
  Collective x = all_reduce(4, 1e6);
  x.ranks.push_back(9);
  EXPECT_THROW(time_collective(c, ideal(), x), std::invalid_argument);
  EXPECT_THROW(time_collective(c, ideal(), all_reduce(1, 1e6)), std::invalid_argument);
  EXPECT_THROW(time_collective(c, ideal(), all_reduce(4, -1)), std::invalid_argument);
}

TEST(Collectives, Deterministic) {
  const auto [k, c, t] = built("node: dgx-h100\nnodes: 8\nfabric: {topology: fat_tree, radix: 16}\n");
  for (double S : {1e4, 3e8}) {
    const auto a = time_collective(c, t, all_reduce(64, S, Algorithm::Auto));
    const auto b = time_collective(c, t, all_reduce(64, S, Algorithm::Auto));
    EXPECT_EQ(a.seconds, b.seconds);
    EXPECT_EQ(a.algorithm, b.algorithm);
  }
}

namespace {
// n GPUs of one node joined pairwise by links of B (no switch).
topo::Cluster full_mesh(int n, double B) {
  topo::Cluster c;
  std::vector<topo::DeviceId> g;
  for (int i = 0; i < n; ++i)
    g.push_back(c.add_device({topo::DeviceKind::Gpu, "g" + std::to_string(i), 0, i, 0, false}));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) c.add_duplex(g[i], g[j], {topo::LinkKind::NvLink, B, 0.0});
  c.set_shape(1, n);
  return c;
}
}  // namespace

TEST(Collectives, ARingOnAnNvlinkMeshUsesBothDirections) {
  // Four GPUs joined pairwise by links of B (GH200's 4-GPU node): NCCL's rings step by 1 and by 3,
  // each carrying half the volume on its own links: all-gather t = (n-1)/n * S / (2B), not / B.
  const int n = 4;
  const double S = 1e9, B = 150e9;
  const topo::Cluster c = full_mesh(n, B);
  EXPECT_NEAR(time_collective(c, ideal(), make(CollectiveOp::AllGather, n, S)).seconds, 3.0 / 4 * S / (2 * B), 1e-9);
  // Through a switch the same split changes nothing: each GPU's one port carries it all.
  EXPECT_NEAR(time_collective(star(n, B), ideal(), make(CollectiveOp::AllGather, n, S)).seconds, 3.0 / 4 * S / B, 1e-9);
}

TEST(Collectives, AnMi300xNodeRingsOverItsInfinityFabricMesh) {
  // Eight MI300X joined pairwise by 448/7 = 64 GB/s xGMI links. K8 less a perfect matching splits
  // into 3 edge-disjoint Hamiltonian cycles, 6 rings run both ways, each carrying a sixth of the
  // volume on its own links: an 8 GB all-gather runs at 6 links x 64 GB/s x the xgmi3 Simple
  // efficiency (0.82, fitted to Azure's 315-317 GB/s all-reduce busbw on ND MI300X v5) of bus
  // bandwidth, 314.9 GB/s, less RCCL's call and step latencies (< 0.5 %); one link per GPU (the
  // matching) stays idle. Rings stepping by k coprime to 8 alone would use 4 links, 2/3 of that.
  const Built b = built("node: mi300x-8gpu\nnodes: 1\n");
  const topo::Route pair = b.cluster.gpu_route(0, 5);
  ASSERT_EQ(pair.links.size(), 1u);
  EXPECT_DOUBLE_EQ(pair.bottleneck_Bps, 64e9);
  const CollectiveTiming t = time_collective(b.cluster, b.tuning, make(CollectiveOp::AllGather, 8, 8e9));
  EXPECT_NEAR(t.busbw_Bps / 1e9, 6 * 64 * 0.82, 314.9 * 0.005);
}

TEST(Collectives, ARingOnAnOddMeshUsesEveryLinkBothWays) {
  // Five GPUs pairwise joined: K5 is two Hamiltonian cycles, four rings both ways, every link
  // busy: all-gather t = (n-1)/n * S / (4B).
  const int n = 5;
  const double S = 1e9, B = 100e9;
  const topo::Cluster c = full_mesh(n, B);
  EXPECT_NEAR(time_collective(c, ideal(), make(CollectiveOp::AllGather, n, S)).seconds, 4.0 / 5 * S / (4 * B), 1e-9);
}

TEST(Collectives, ConcurrentGroupsShareTheLinksTheyCross) {
  // Disjoint groups (two halves of a star): each runs as if alone.
  const topo::Cluster s = star(8, 100e9);
  Collective a = make(CollectiveOp::AllGather, 4, 1e9), b = a;
  b.ranks = {4, 5, 6, 7};
  EXPECT_DOUBLE_EQ(estimate_concurrent_seconds(s, ideal(), {a, b}), estimate_seconds(s, ideal(), a));
  // Two rails' rings on a 4:1 oversubscribed fat tree (one node per leaf) leave every leaf through
  // the same few uplinks: together they take about twice as long as one alone, and as long as
  // the engine takes to run them all at once (max-min over the shared links).
  const Built f = built("node: dgx-h100\nnodes: 4\nfabric: {topology: fat_tree, radix: 16, oversubscription: 4}\n");
  std::vector<Collective> rails;
  for (int rail = 0; rail < 8; ++rail) {
    Collective c = make(CollectiveOp::AllGather, 4, 1e9);
    c.ranks = {rail, 8 + rail, 16 + rail, 24 + rail};
    rails.push_back(c);
  }
  const double alone = estimate_seconds(f.cluster, f.tuning, rails[0]);
  const double together = estimate_concurrent_seconds(f.cluster, f.tuning, rails);
  EXPECT_GT(together, 1.5 * alone) << alone;
  sim::Engine engine;
  const auto links = f.cluster.bind(engine);
  sim::TaskGraph g;
  for (const Collective& c : rails) append_collective(g, f.cluster, links, f.tuning, c, {}, 0, sim::kNoTrack, nullptr);
  EXPECT_NEAR(sim::execute(engine, g).makespan.seconds(), together, 0.02 * together) << alone;
}
