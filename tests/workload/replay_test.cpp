// Replay of a training step on an idealised cluster, against closed forms:
//  - 1F1B: step = (m + p - 1) * (t_f + t_b), bubble fraction (p - 1) / (m + p - 1)
//    (Narayanan et al., SC'21, section 2.2.1);
//  - interleaved with v chunks: bubble fraction (p - 1) / (m*v + p - 1) (same paper, 2.2.2);
//  - GPipe: the same bubble as 1F1B for equal stage times.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "models/workload/layer_timing.hpp"
#include "models/workload/pipeline_schedule.hpp"
#include "models/workload/replay.hpp"

using namespace stacksim;
using namespace stacksim::workload;

namespace {

// GPUs on one switch; links fast enough to vanish unless a test slows them.
topo::Cluster ideal_cluster(int gpus, double link_Bps = 1e15) {
  topo::Cluster c;
  const topo::DeviceId sw = c.add_device({topo::DeviceKind::NvSwitch, "switch", 0, 0, 0, false});
  for (int i = 0; i < gpus; ++i) {
    const topo::DeviceId g = c.add_device({topo::DeviceKind::Gpu, "gpu" + std::to_string(i), 0, i, 0, false});
    c.add_duplex(g, sw, {topo::LinkKind::NvLink, link_Bps, 0.0});
  }
  c.set_shape(1, gpus);
  return c;
}

CostedOp compute(double seconds, uint16_t category = kCatGemm) {
  CostedOp op;
  op.kind = CostedOp::Kind::Compute;
  op.name = "op";
  op.category = category;
  op.seconds = seconds;
  return op;
}

// A pipeline of `pp` stages, one layer per virtual stage, forward t_f and backward 2*t_f per layer.
StepProgram pipeline(int pp, int vp, int m, double t_f, ScheduleKind schedule) {
  StepProgram p;
  p.pp = pp;
  p.vp = vp;
  p.micro_batches = m;
  p.schedule = schedule;
  for (int l = 0; l < pp * vp; ++l) {
    LayerProgram layer;
    layer.forward = {compute(t_f)};
    layer.backward = {compute(2 * t_f)};
    p.layers.push_back(layer);
  }
  return p;
}

// A layer whose compute is negligible next to its data-parallel traffic.
LayerProgram negligible_layer(double grad_bytes, double param_bytes) {
  LayerProgram layer;
  layer.forward = {compute(1e-6)};
  layer.backward = {compute(1e-6)};
  layer.grad_bytes = grad_bytes;
  layer.param_bytes = param_bytes;
  return layer;
}

// ZeRO-1 on one layer of negligible compute (gradients G, parameters P), nothing overlapped and
// all of it in one bucket: its data-parallel traffic is timed alone.
StepProgram unoverlapped_zero1(double grad_bytes, double param_bytes) {
  StepProgram p;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = false;
  p.dp_bucket_bytes = 1e12;
  p.layers.push_back(negligible_layer(grad_bytes, param_bytes));
  return p;
}

double bubble_fraction(const ReplayResult& r) { return r.breakdown_s[kCatPipelineBubble] / r.step_time_s; }

}  // namespace

TEST(Replay, OneFOneBMatchesTheClosedForm) {
  const int pp = 4, m = 8;
  const double t_f = 1e-3, t_b = 2e-3;
  const topo::Cluster cluster = ideal_cluster(pp);
  const ReplayResult r = replay_step(pipeline(pp, 1, m, t_f, ScheduleKind::OneFOneB), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(r.step_time_s, (m + pp - 1) * (t_f + t_b), 1e-9);
  EXPECT_NEAR(bubble_fraction(r), double(pp - 1) / (m + pp - 1), 1e-6);
  double sum = 0;
  for (double x : r.breakdown_s) sum += x;
  EXPECT_NEAR(sum, r.step_time_s, 1e-9);  // the breakdown accounts for every second
}

TEST(Replay, InterleavingDividesTheBubbleByTheChunkCount) {
  const int pp = 4, vp = 2, m = 8;
  const double t_f = 1e-3;  // per chunk; a stage's forward per micro-batch is vp * t_f
  const topo::Cluster cluster = ideal_cluster(pp);
  const ReplayResult r = replay_step(pipeline(pp, vp, m, t_f, ScheduleKind::OneFOneB), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(bubble_fraction(r), double(pp - 1) / (m * vp + pp - 1), 1e-6);
}

// DualPipe's step evaluated directly from its item order (dualpipe.py's semantics): each rank
// runs its items in order; a forward waits for the previous position's forward of its
// micro-batch, a backward for the next position's backward (the last position for its own
// forward); an F&B pair starts once both inputs are in and takes F + B; a deferring backward
// takes B and its weight item W; comm is free. Position j of the reverse direction is rank pp-1-j.
double dualpipe_recurrence(int pp, int m, double F, double B, double W) {
  std::vector<std::vector<PipelineItem>> items;
  for (int r = 0; r < pp; ++r) items.push_back(stage_schedule(ScheduleKind::DualPipe, pp, 1, m, r));
  std::map<std::tuple<bool, int, int>, double> done;  // (backward, micro-batch, position) -> end
  std::vector<size_t> next(pp, 0);
  std::vector<double> clock(pp, 0.0);
  const auto position = [&](const PipelineItem& it, int r) { return it.chunk == 0 ? r : pp - 1 - r; };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < pp; ++r)
      while (next[r] < items[r].size()) {
        const size_t n = items[r][next[r]].overlap_next ? 2 : 1;
        double start = clock[r], length = 0;
        bool ready = true;
        for (size_t i = next[r]; i < next[r] + n; ++i) {
          const PipelineItem& it = items[r][i];
          const int p = position(it, r);
          if (!it.weight) {
            const auto need = !it.backward  ? std::make_tuple(false, it.micro_batch, p - 1)
                              : p == pp - 1 ? std::make_tuple(false, it.micro_batch, p)
                                            : std::make_tuple(true, it.micro_batch, p + 1);
            if (!it.backward && p == 0) {
            } else if (auto d = done.find(need); d != done.end()) {
              start = std::max(start, d->second);
            } else {
              ready = false;
            }
          }
          length += it.weight ? W : !it.backward ? F : it.defer_weight ? B : B + W;
        }
        if (!ready) break;
        for (size_t i = next[r]; i < next[r] + n; ++i) {
          const PipelineItem& it = items[r][i];
          if (!it.weight) done[{it.backward, it.micro_batch, position(it, r)}] = start + length;
        }
        clock[r] = start + length;
        next[r] += n;
        progress = true;
      }
  }
  for (int r = 0; r < pp; ++r) EXPECT_EQ(next[r], items[r].size()) << "rank " << r << " stalled";
  return *std::max_element(clock.begin(), clock.end());
}

TEST(Replay, DualPipeMatchesItsScheduleEvaluatedDirectly) {
  // Chunk times F (forward), B (input gradients), W (weight gradients) on a compute-only
  // cluster. (The DeepSeek-V3 report's Table 2 gives the bubble as (pp/2 - 1)(F&B + B - 3W); the
  // dualpipe.py order run with F&B = F + B leaves more: 2 ms instead of 0 at pp 4, F = B = W = 1 ms.)
  for (const auto& [F, B, W] : {std::tuple{1e-3, 1e-3, 1e-3}, std::tuple{1e-3, 1.5e-3, 0.5e-3}})
    for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{8, 20}}) {
      StepProgram p = pipeline(pp, 1, m, F, ScheduleKind::DualPipe);
      for (LayerProgram& l : p.layers) {
        l.forward = {compute(F, kCatAttention)};  // a category of its own, to follow it in the breakdown
        CostedOp wgrad = compute(W);
        wgrad.weight_grad = true;
        l.backward = {compute(B), wgrad};
      }
      const ReplayResult r = replay_step(p, ideal_cluster(pp), coll::CommTuning{}, {});
      const double expected = dualpipe_recurrence(pp, m, F, B, W);
      EXPECT_NEAR(r.step_time_s, expected, 1e-9) << "pp " << pp << " m " << m;
      EXPECT_GT(expected, m * (F + B + W));  // every rank computes m chunks of F + B + W, plus a bubble
      double sum = 0;
      for (double x : r.breakdown_s) sum += x;
      EXPECT_NEAR(sum, r.step_time_s, 1e-9);
      // A pair's forward and backward share the GPU; the breakdown splits their overlap evenly, so
      // each category gets its own GPU time: m forwards, m backwards with their weight gradients.
      EXPECT_NEAR(r.breakdown_s[kCatAttention], m * F, 1e-9);
      EXPECT_NEAR(r.breakdown_s[kCatGemm], m * (B + W), 1e-9);
    }
}

TEST(Replay, GPipeHasTheSameBubbleAsOneFOneB) {
  const int pp = 4, m = 6;
  const topo::Cluster cluster = ideal_cluster(pp);
  const ReplayResult r = replay_step(pipeline(pp, 1, m, 1e-3, ScheduleKind::GPipe), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(bubble_fraction(r), double(pp - 1) / (m + pp - 1), 1e-6);
}

TEST(Replay, NoPipelineMeansNoBubble) {
  const topo::Cluster cluster = ideal_cluster(1);
  const ReplayResult r = replay_step(pipeline(1, 1, 5, 1e-3, ScheduleKind::OneFOneB), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(r.step_time_s, 5 * 3e-3, 1e-9);
  EXPECT_EQ(r.breakdown_s[kCatPipelineBubble], 0.0);
  EXPECT_NEAR(r.breakdown_s[kCatGemm], r.step_time_s, 1e-9);
}

TEST(Replay, IsDeterministic) {
  const topo::Cluster cluster = ideal_cluster(4);
  const StepProgram p = pipeline(4, 2, 8, 1e-3, ScheduleKind::OneFOneB);
  const ReplayResult a = replay_step(p, cluster, coll::CommTuning{}, {});
  const ReplayResult b = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.breakdown_s, b.breakdown_s);
}

namespace {
CostedOp collective(Group group, coll::CollectiveOp kind, double bytes, bool overlaps_next = false) {
  CostedOp op;
  op.kind = CostedOp::Kind::Collective;
  op.name = "collective";
  op.group = group;
  op.op = kind;
  op.bytes = bytes;
  op.overlaps_next = overlaps_next;
  return op;
}

CostedOp tp_all_reduce(double bytes, bool overlaps_next) {
  return collective(Group::TP, coll::CollectiveOp::AllReduce, bytes, overlaps_next);
}

}  // namespace

TEST(LayerTiming, ForwardAndBackwardOfOneLayerAlone) {
  // Three layers of different cost in a pipeline with data parallelism: the timing of layer 1
  // is its own ops, nothing of the pipeline, the other layers or the optimizer.
  StepProgram p = pipeline(1, 1, 4, 1e-3, ScheduleKind::OneFOneB);
  p.layers.resize(3, p.layers.front());
  p.layers[1].forward = {compute(2e-3), compute(1e-3, kCatAttention)};
  p.layers[1].backward = {compute(5e-3)};
  p.optimizer = {compute(7e-3, kCatOptimizer)};
  const LayerTiming t = time_layer(p, 1, ideal_cluster(1), coll::CommTuning{});
  EXPECT_EQ(t.layer, 1);
  EXPECT_NEAR(t.forward_s, 3e-3, 1e-12);
  EXPECT_NEAR(t.backward_s, 5e-3, 1e-12);
}

TEST(LayerTiming, AnOverlappedCollectiveHidesUnderTheNextOpOnly) {
  // dgrad, the input-gradient all-reduce launched async, wgrad, then a norm backward: the
  // collective overlaps wgrad and is waited for before the norm (max(comm, wgrad), not more).
  StepProgram p;
  p.tp = 2;
  const topo::Cluster cluster = ideal_cluster(2, 100e9);
  const double bytes = 100e6;
  LayerProgram alone;
  alone.backward = {tp_all_reduce(bytes, false)};
  p.layers = {alone};
  const double comm = time_layer(p, 0, cluster, coll::CommTuning{}).backward_s;
  ASSERT_GT(comm, 0.0);
  for (double wgrad : {0.5 * comm, 2.0 * comm}) {
    LayerProgram l;
    l.backward = {compute(1e-3), tp_all_reduce(bytes, true), compute(wgrad), compute(0.3e-3, kCatElementwise)};
    p.layers = {l};
    EXPECT_NEAR(time_layer(p, 0, cluster, coll::CommTuning{}).backward_s, 1e-3 + std::max(comm, wgrad) + 0.3e-3, 1e-9)
        << "wgrad " << wgrad;
    l.backward[1].overlaps_next = false;  // in sequence: the sum
    p.layers = {l};
    EXPECT_NEAR(time_layer(p, 0, cluster, coll::CommTuning{}).backward_s, 1e-3 + comm + wgrad + 0.3e-3, 1e-9);
  }
}

TEST(Replay, BlockingPipelineSendsDelayTheSendersNextItem) {
  // GPipe, 2 stages, 2 micro-batches, activation/gradient transfer time T. Asynchronous sends:
  // step = 3 t_f + 2 T + 3 t_b. Megatron's blocking p2p also holds each sender until its send is
  // through: stage 0's second forward and stage 1's second backward start T later, 3 t_f + 4 T + 3 t_b.
  const double t_f = 1e-3, t_b = 2e-3;
  StepProgram p = pipeline(2, 1, 2, t_f, ScheduleKind::GPipe);
  p.p2p_bytes = 50e6;
  const topo::Cluster cluster = ideal_cluster(2, 100e9);
  const double async_step = replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s;
  const double T = (async_step - 3 * t_f - 3 * t_b) / 2;
  ASSERT_GT(T, 0.4e-3);  // about 50 MB at 100 GB/s
  p.blocking_p2p = true;
  const ReplayResult r = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(r.step_time_s, 3 * t_f + 4 * T + 3 * t_b, 1e-9);
  EXPECT_GT(r.breakdown_s[kCatPpComm], 0.0);
}

namespace {
// Two nodes of `per_node` GPUs: NVLink within a node (fast enough to vanish), and each GPU's own
// NIC link of nic_Bps to one network switch.
topo::Cluster two_nodes(int per_node, double nic_Bps) {
  topo::Cluster c;
  const topo::DeviceId net = c.add_device({topo::DeviceKind::NetworkSwitch, "leaf", -1, 0, 1, false});
  for (int n = 0; n < 2; ++n) {
    const std::string node = "node" + std::to_string(n);
    const topo::DeviceId sw = c.add_device({topo::DeviceKind::NvSwitch, node + ".nvswitch", n, 0, 0, false});
    for (int i = 0; i < per_node; ++i) {
      const std::string gpu = node + ".gpu" + std::to_string(i);
      const topo::DeviceId g = c.add_device({topo::DeviceKind::Gpu, gpu, n, i, 0, false});
      const topo::DeviceId nic = c.add_device({topo::DeviceKind::Nic, gpu + ".nic", n, i, 0, false});
      c.add_duplex(g, sw, {topo::LinkKind::NvLink, 1e15, 0.0});
      c.add_duplex(g, nic, {topo::LinkKind::Pcie, 1e15, 0.0});
      c.add_duplex(nic, net, {topo::LinkKind::Network, nic_Bps, 0.0});
    }
  }
  c.set_shape(2, per_node);
  return c;
}
}  // namespace

TEST(Replay, ScatterGatherSendsASliceAcrossNodesAndGathersItOverNvlink) {
  // One pipeline stage per node, tp 4, one micro-batch under GPipe: step = 2 (t_f + t_b) + 2 T,
  // T the transfer of the hidden states between the stages. Each tp rank sending the whole
  // tensor over its own NIC: T = B / nic. Scattered (Megatron-LM's scatter_gather_tensors_in_
  // pipeline): each sends B / tp, and the all-gather over NVLink costs next to nothing.
  const double t_f = 1e-3, t_b = 2e-3, B = 40e6, nic_Bps = 10e9;
  const int tp = 4;
  StepProgram p = pipeline(2, 1, 1, t_f, ScheduleKind::GPipe);
  p.tp = tp;
  p.p2p_bytes = B;
  const topo::Cluster cluster = two_nodes(tp, nic_Bps);
  const auto transfer_s = [&](const StepProgram& q) {
    return (replay_step(q, cluster, coll::CommTuning{}, {}).step_time_s - 2 * (t_f + t_b)) / 2;
  };
  EXPECT_NEAR(transfer_s(p), B / nic_Bps, 0.02 * B / nic_Bps);
  p.p2p_bytes = B / tp;
  p.p2p_gather_bytes = B;
  EXPECT_NEAR(transfer_s(p), B / tp / nic_Bps, 0.05 * B / tp / nic_Bps);  // + the all-gather's latency
  const ReplayResult r = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_GT(r.breakdown_s[kCatPpComm], 0.0);  // the critical stage sees its receives as pipeline traffic
  EXPECT_LT(r.breakdown_s[kCatPpComm], 2 * B / tp / nic_Bps * 1.05);
}

namespace {
// One layer whose forward is an expert all-to-all of `bytes` over ep 2 (and a negligible backward).
StepProgram expert_all_to_all(double bytes) {
  StepProgram p;
  p.ep = 2;
  LayerProgram layer;
  layer.forward = {collective(Group::EP, coll::CollectiveOp::AllToAll, bytes)};
  layer.backward = {compute(1e-6)};
  p.layers.push_back(layer);
  return p;
}
}  // namespace

TEST(Replay, ExpertGroupsSpanContextParallelRanks) {
  // Megatron-Core carves ep out of cp x dp: with cp 2, dp 1 and ep 2 the expert group is the two
  // context-parallel ranks, and its all-to-all crosses the link between them (closed form for two
  // ranks: each sends half its buffer to the other).
  const double link_Bps = 100e9, bytes = 1e9;
  StepProgram p = expert_all_to_all(bytes);
  p.cp = 2;
  const ReplayResult r = replay_step(p, ideal_cluster(2, link_Bps), coll::CommTuning{}, {});
  EXPECT_NEAR(r.breakdown_s[kCatEpComm], bytes / 2 / link_Bps, 0.05 * bytes / 2 / link_Bps);
  // The layer timed alone needs no more ranks than the step: the same two.
  const LayerTiming t = time_layer(p, 0, ideal_cluster(2, link_Bps), coll::CommTuning{});
  EXPECT_NEAR(t.forward_s, bytes / 2 / link_Bps, 0.05 * bytes / 2 / link_Bps);
}

TEST(Replay, FoldedExpertGroupsSpanTensorParallelRanks) {
  // With whole experts (etp 1) the expert group runs along tp first: tp 2, dp 1, ep 2 puts the
  // two tensor-parallel ranks in one group, and its all-to-all crosses the link between them.
  const double link_Bps = 100e9, bytes = 1e9;
  StepProgram p = expert_all_to_all(bytes);
  p.tp = 2;
  p.experts_folded = true;
  const ReplayResult r = replay_step(p, ideal_cluster(2, link_Bps), coll::CommTuning{}, {});
  EXPECT_NEAR(r.breakdown_s[kCatEpComm], bytes / 2 / link_Bps, 0.05 * bytes / 2 / link_Bps);
  EXPECT_EQ(expert_replicas(p), 1);
  // Unfolded, the same plan has ep 2 along dp: two replicas, and time_layer forms them.
  p.experts_folded = false;
  p.dp = 2;
  EXPECT_EQ(expert_replicas(p), 2);
  const LayerTiming t = time_layer(p, 0, ideal_cluster(4, link_Bps), coll::CommTuning{});
  EXPECT_GT(t.forward_s, 0.0);
}

TEST(Replay, RoutedExpertsAreReducedOverTheirOwnDataParallelGroup) {
  // ZeRO-1 on dp 4 over two nodes of two GPUs, ep 2 along dp: each expert-parallel group is one
  // node, so the ranks holding the same experts (the expert data-parallel group, dp / ep = 2) sit
  // on different nodes, and the experts' gradients G and parameters P cross the NICs between
  // them: reduce-scatter and all-gather over 2, (G + P) / 2 / nic, nothing overlapped. With ep 4
  // every rank holds experts of its own: nothing to reduce.
  const double nic_Bps = 10e9, G = 2e9, P = 1e9;
  StepProgram p = unoverlapped_zero1(0, 0);
  p.dp = 4;
  p.ep = 2;
  p.layers.front().expert_grad_bytes = G;
  p.layers.front().expert_param_bytes = P;
  const topo::Cluster cluster = two_nodes(2, nic_Bps);
  const auto dp_s = [&](const StepProgram& q) {
    return replay_step(q, cluster, coll::CommTuning{}, {}).breakdown_s[kCatDpComm];
  };
  EXPECT_EQ(group_size(p, Group::ExpertDp), 2);
  EXPECT_NEAR(dp_s(p), (G + P) / 2 / nic_Bps, 0.01 * (G + P) / 2 / nic_Bps);
  // Whole experts folded along tp 2 (dp 2): the group is again the two ranks of the same tp
  // position on the two nodes.
  StepProgram folded = p;
  folded.tp = 2;
  folded.dp = 2;
  folded.experts_folded = true;
  EXPECT_EQ(group_size(folded, Group::ExpertDp), 2);
  EXPECT_NEAR(dp_s(folded), (G + P) / 2 / nic_Bps, 0.01 * (G + P) / 2 / nic_Bps);
  p.ep = 4;
  EXPECT_EQ(group_size(p, Group::ExpertDp), 1);
  EXPECT_EQ(dp_s(p), 0.0);
}

TEST(Replay, ContextParallelRanksReduceGradientsWithoutDataParallelism) {
  // dp 1, cp 2: the two context-parallel ranks hold the same weights, so ZeRO-1 reduce-scatters
  // their gradients and gathers their parameters over both (Megatron's data-parallel-with-
  // context-parallel group): 1/2 (G + P) / B, nothing overlapped.
  const double B = 100e9, G = 2e9, P = 1e9;
  StepProgram p = unoverlapped_zero1(G, P);
  p.cp = 2;
  const ReplayResult r = replay_step(p, ideal_cluster(2, B), coll::CommTuning{}, {});
  EXPECT_NEAR(r.breakdown_s[kCatDpComm], 0.5 * (G + P) / B, 1e-4);
}

TEST(Replay, TheBreakdownIsTheBusiestStages) {
  // Two stages, the second three times slower: it paces the pipeline and its only idle time is
  // waiting for the first forward (t_f) and for the first stage's last backward (2 t_f).
  const double t_f = 1e-3;
  const int m = 8;
  StepProgram p = pipeline(2, 1, m, t_f, ScheduleKind::OneFOneB);
  p.layers[1].forward = {compute(3 * t_f)};
  p.layers[1].backward = {compute(6 * t_f)};
  const ReplayResult r = replay_step(p, ideal_cluster(2), coll::CommTuning{}, {});
  EXPECT_EQ(r.critical_stage, 1);
  EXPECT_NEAR(r.step_time_s, 3 * t_f + m * 9 * t_f, 1e-9);
  EXPECT_NEAR(r.breakdown_s[kCatPipelineBubble], 3 * t_f, 1e-9);
}

TEST(Replay, HybridShardingReducesOverTheShardThenAcrossReplicas) {
  // ZeRO-1 on 4 data-parallel ranks, gradients G and parameters P, nothing overlapped. Full
  // sharding: reduce-scatter over 4, then all-gather over 4: 3/4 (G + P) / B. Shards of 2:
  // reduce-scatter over 2 (G/2), all-reduce of the half over the 2 replicas (G/2), all-gather over
  // 2 (P/2): (G + P/2) / B.
  const double B = 100e9, G = 2e9, P = 1e9;
  StepProgram p = unoverlapped_zero1(G, P);
  p.dp = 4;
  const auto dp_s = [&](int shard) {
    p.shard_size = shard;
    return replay_step(p, ideal_cluster(4, B), coll::CommTuning{}, {}).breakdown_s[kCatDpComm];
  };
  // (plus the default tuning's call and step latencies, tens of microseconds)
  EXPECT_NEAR(dp_s(0), 0.75 * (G + P) / B, 1e-4);
  EXPECT_NEAR(dp_s(2), (G + P / 2) / B, 1e-4);
}

TEST(Replay, FsdpUnderAPipelineGathersAndReducesOncePerStep) {
  // FSDP without a pipeline gathers every layer in each micro-batch's forward and backward and
  // reduce-scatters each micro-batch's gradients; under a pipeline (torchtitan) a stage gathers
  // once and reduce-scatters after its last micro-batch, so its data-parallel traffic does not
  // grow with the micro-batches.
  const double B = 100e9, G = 2e9, P = 1e9;
  const auto dp_s = [&](int pp, int m) {
    StepProgram p;
    p.dp = 2;
    p.pp = pp;
    p.zero = 3;
    p.micro_batches = m;
    for (int l = 0; l < pp; ++l) p.layers.push_back(negligible_layer(G, P));
    return replay_step(p, ideal_cluster(2 * pp, B), coll::CommTuning{}, {}).breakdown_s[kCatDpComm];
  };
  // One layer on dp 2: gather P/2 twice (forward, backward) and reduce-scatter G/2 per micro-batch.
  EXPECT_NEAR(dp_s(1, 1), (P + G / 2) / B, 1e-3);
  EXPECT_NEAR(dp_s(1, 4), 4 * (P + G / 2) / B, 4e-3);
  // Per stage: gather P/2 once, reduce-scatter G/2 once, whatever the micro-batch count.
  EXPECT_NEAR(dp_s(2, 4), dp_s(2, 1), 1e-3);
  EXPECT_LT(dp_s(2, 4), 0.5 * dp_s(1, 4));
}

TEST(Replay, FsdpElementWisePassesCostTheirGpuTime) {
  // FSDP's gradient cast/copy runs on the reduction stream under the next layer's backward and
  // shares the GPU with it (max-min), its copy-out after each gather on the compute stream: on a
  // GPU that is never idle, each adds exactly its own time, per layer and pass.
  const double t_f = 0.1, prep = 0.01, copy = 0.005;
  const auto step = [&](double prep_s, double copy_s) {
    StepProgram p;
    p.dp = 2;
    p.zero = 3;
    for (int l = 0; l < 4; ++l) {
      LayerProgram layer;
      layer.forward = {compute(t_f)};
      layer.backward = {compute(2 * t_f)};
      layer.param_bytes = layer.grad_bytes = 1e6;
      layer.fsdp_grad_prep_s = prep_s;
      layer.fsdp_gather_copy_s = copy_s;
      p.layers.push_back(layer);
    }
    return replay_step(p, ideal_cluster(2), coll::CommTuning{}, {}).step_time_s;
  };
  const double base = step(0, 0);
  EXPECT_NEAR(base, 4 * 3 * t_f, 1e-3);
  EXPECT_NEAR(step(prep, 0) - base, 4 * prep, 1e-6);      // one cast per layer and micro-batch
  EXPECT_NEAR(step(0, copy) - base, 2 * 4 * copy, 1e-6);  // forward and backward gathers
}

TEST(Replay, OverlappedParameterGatherWaitsOnlyForEachLayersOwnBucket) {
  // ZeRO-1 with overlap_param_gather on dp 4: the updated parameters arrive bucket by bucket in
  // forward order and each layer's first forward waits for its own (Megatron-Core's pre-hooks), so
  // only the first layer's gather (3/4 P / B) is exposed when a layer's forward outlasts a gather.
  const double B = 100e9, P = 40e9, t_f = 1.0;  // a gather takes 0.3 s
  StepProgram p;
  p.dp = 4;
  p.zero = 1;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = true;
  for (int l = 0; l < 4; ++l) {
    LayerProgram layer;
    layer.forward = {compute(t_f)};
    layer.backward = {compute(2 * t_f)};
    layer.param_bytes = P;
    p.layers.push_back(layer);
  }
  const double step = replay_step(p, ideal_cluster(4, B), coll::CommTuning{}, {}).step_time_s;
  EXPECT_NEAR(step, 4 * 3 * t_f + 0.75 * P / B, 1e-3);
}

TEST(Replay, LongStepsExtendTheSteadyStateExactly) {
  // 1F1B, interleaved and DualPipe pipelines with activations on finite links and blocking sends:
  // past the fill, every round of pp micro-batches takes the same time, so replaying 16 and 32
  // micro-batches (8 rounds of pp at least) and extending the line gives the full replay of 40.
  for (const auto& [vp, schedule] : {std::pair{1, ScheduleKind::OneFOneB}, std::pair{2, ScheduleKind::OneFOneB},
                                     std::pair{1, ScheduleKind::DualPipe}}) {
    StepProgram p = pipeline(4, vp, 40, 1e-3, schedule);
    p.p2p_bytes = 20e6;
    p.blocking_p2p = true;
    const topo::Cluster c = ideal_cluster(4, 50e9);
    const ReplayResult full = replay_step(p, c, coll::CommTuning{}, {});
    bool extrapolated = false;
    const ReplayResult bounded = replay_step_bounded(p, c, coll::CommTuning{}, {}, 16, &extrapolated);
    EXPECT_TRUE(extrapolated);
    EXPECT_NEAR(bounded.step_time_s, full.step_time_s, 1e-9 * full.step_time_s)
        << "vp " << vp << " schedule " << static_cast<int>(schedule);
    for (size_t k = 0; k < full.breakdown_s.size(); ++k)
      EXPECT_NEAR(bounded.breakdown_s[k], full.breakdown_s[k], 1e-9 * full.step_time_s) << category_name(k);
  }
}

TEST(Replay, DualPipeHidesOneChunksCommunicationUnderTheOthersCompute) {
  // Each forward and backward chunk: compute t, then a tensor-parallel all-reduce of about t.
  // In 1F1B nothing overlaps them. A DualPipe rank holds two stages, so it computes and
  // communicates twice as much per step; in its F&B pairs one chunk's all-reduce runs while the
  // other computes (compute t and t shared, then the two all-reduces: 2t + c instead of 2t + 2c),
  // so about half of its communication leaves the step.
  const int pp = 4, m = 16, tp = 2;
  const double t = 1e-3;
  const topo::Cluster cluster = ideal_cluster(pp * tp, 1e9);
  auto step = [&](ScheduleKind schedule, double bytes) {
    StepProgram p = pipeline(pp, 1, m, t, schedule);
    p.tp = tp;
    for (LayerProgram& l : p.layers) {
      l.forward = {compute(t), tp_all_reduce(bytes, false)};
      l.backward = {compute(t), tp_all_reduce(bytes, false)};
    }
    return replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s;
  };
  const double bytes = 1e6;  // about 1 ms on a 1 GB/s link
  const double one_f_one_b =
      step(ScheduleKind::OneFOneB, bytes) - step(ScheduleKind::OneFOneB, 0);  // every all-reduce exposed
  ASSERT_GT(one_f_one_b, 0.5 * 2 * m * t);
  const double dualpipe =
      step(ScheduleKind::DualPipe, bytes) - step(ScheduleKind::DualPipe, 0);  // of twice the communication
  EXPECT_LT(dualpipe, 0.6 * 2 * one_f_one_b);
  EXPECT_GT(dualpipe, 0.3 * 2 * one_f_one_b);  // the second all-reduce of each pair stays exposed
}

namespace {
// One stage, one micro-batch, a forward-only layer of `ops`, launched at `launch_s` per kernel.
double forward_step_s(const std::vector<CostedOp>& ops, double launch_s, ReplayResult* out = nullptr) {
  StepProgram p;
  LayerProgram l;
  l.forward = ops;
  p.layers = {l};
  p.host_launch_s = launch_s;
  const ReplayResult r = replay_step(p, ideal_cluster(1), coll::CommTuning{}, {});
  if (out) *out = r;
  return r.step_time_s;
}
}  // namespace

TEST(Replay, TheHostAheadOfTheGpuCostsOnlyTheFirstLaunch) {
  // Three 1 ms kernels launched at 1 us each: the GPU starts after the first launch and never
  // waits again (the host is done at 3 us).
  const double L = 1e-6;
  EXPECT_NEAR(forward_step_s({compute(1e-3), compute(1e-3), compute(1e-3)}, L), L + 3e-3, 1e-12);
  EXPECT_NEAR(forward_step_s({compute(1e-3), compute(1e-3), compute(1e-3)}, 0.0), 3e-3, 1e-12);
}

TEST(Replay, TheStepsFixedHostWorkPrecedesEachStagesFirstLaunch) {
  // 2 ms of step-fixed host work before three 1 ms kernels launched at 1 us: the GPU idles 2 ms
  // plus the first launch, then never waits (host_step_s alone, with free launches, the same).
  StepProgram p;
  LayerProgram l;
  l.forward = {compute(1e-3), compute(1e-3), compute(1e-3)};
  p.layers = {l};
  p.host_launch_s = 1e-6;
  p.host_step_s = 2e-3;
  ReplayResult r = replay_step(p, ideal_cluster(1), coll::CommTuning{}, {});
  EXPECT_NEAR(r.step_time_s, 2e-3 + 1e-6 + 3e-3, 1e-12);
  EXPECT_NEAR(r.breakdown_s[kCatHostLaunch], 2e-3 + 1e-6, 1e-12);
  p.host_launch_s = 0;
  EXPECT_NEAR(replay_step(p, ideal_cluster(1), coll::CommTuning{}, {}).step_time_s, 2e-3 + 3e-3, 1e-12);
  // Two pipeline stages: each rank's host does the work at the step's start, so the second
  // stage's is hidden under the first stage's forward (1 ms > 0.5 ms) and the step grows by one.
  StepProgram q;
  q.pp = 2;
  q.micro_batches = 2;
  LayerProgram f;
  f.forward = {compute(1e-3)};
  f.backward = {compute(2e-3)};
  q.layers = {f, f};
  const topo::Cluster two = ideal_cluster(2);
  const double without = replay_step(q, two, coll::CommTuning{}, {}).step_time_s;
  q.host_step_s = 0.5e-3;
  EXPECT_NEAR(replay_step(q, two, coll::CommTuning{}, {}).step_time_s - without, 0.5e-3, 1e-12);
}

TEST(Replay, KernelsShorterThanTheirLaunchRunAtTheLaunchRate) {
  // 100 kernels of 1 us launched at 10 us each: the step is the host's 1 ms (the last kernel's
  // 1 us aside), and the breakdown says the GPU waited for launches all but its 100 us of work.
  const double L = 10e-6;
  std::vector<CostedOp> ops(100, compute(1e-6));
  ReplayResult r;
  EXPECT_NEAR(forward_step_s(ops, L, &r), 100 * L, 1e-12);
  EXPECT_NEAR(r.breakdown_s[kCatGemm], 100e-6, 1e-12);
  EXPECT_NEAR(r.breakdown_s[kCatHostLaunch], 100 * L - 100e-6, 1e-12);
  EXPECT_EQ(r.breakdown_s[kCatIdle], 0.0);
}

TEST(Replay, AHostSyncExposesTheLaunchesAfterIt) {
  // A 1 ms kernel, then 50 short kernels (1 us of GPU work) at 10 us per launch. Without a sync
  // the host launched them all while the long kernel ran: 1 ms + one launch + 1 us. A sync before
  // them (a dropless MoE dispatch reading its token counts) makes the host wait for the long
  // kernel, then launch all 50: 1 ms + 51 launches.
  const double L = 10e-6;
  CostedOp shorts = compute(1e-6);
  shorts.launches = 50;
  const double free_running = forward_step_s({compute(1e-3), shorts}, L);
  EXPECT_NEAR(free_running, L + 1e-3 + 1e-6, 1e-12);
  shorts.host_sync = true;
  ReplayResult r;
  EXPECT_NEAR(forward_step_s({compute(1e-3), shorts}, L, &r), L + 1e-3 + 50 * L, 1e-12);
  EXPECT_NEAR(r.breakdown_s[kCatHostLaunch], L + 50 * L - 1e-6, 1e-12);  // all but the 1 us of work
}

TEST(Replay, ACollectiveWaitsForItsLaunchAndCanBeTheSync) {
  // TP all-reduce between two kernels: launched once, so with a sync before it the GPU idles
  // one launch between the first kernel and the collective.
  StepProgram p;
  p.tp = 2;
  p.host_launch_s = 10e-6;
  const topo::Cluster cluster = ideal_cluster(2, 100e9);
  LayerProgram l;
  l.forward = {compute(1e-3), tp_all_reduce(1e6, false), compute(1e-3)};
  p.layers = {l};
  const double async = replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s;
  p.layers[0].forward[1].host_sync = true;
  const ReplayResult synced = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(synced.step_time_s - async, p.host_launch_s, 1e-12);
  EXPECT_GT(synced.breakdown_s[kCatHostLaunch], 0.0);
}

namespace {
// Two nodes of one GPU each, every device on a PCIe switch: CPU -> switch -> GPU carries the
// batch copy, GPU -> switch -> NIC -> network the data-parallel traffic (GPUDirect RDMA).
topo::Cluster pcie_nodes(double pcie_Bps, double nic_Bps) {
  topo::Cluster c;
  const topo::DeviceId net = c.add_device({topo::DeviceKind::NetworkSwitch, "leaf", -1, 0, 1, false});
  for (int n = 0; n < 2; ++n) {
    const std::string node = "node" + std::to_string(n);
    const topo::DeviceId cpu = c.add_device({topo::DeviceKind::Cpu, node + ".cpu0", n, 0, 0, false});
    const topo::DeviceId sw = c.add_device({topo::DeviceKind::PcieSwitch, node + ".pcie0", n, 0, 0, false});
    const topo::DeviceId g = c.add_device({topo::DeviceKind::Gpu, node + ".gpu0", n, 0, 0, false});
    const topo::DeviceId nic = c.add_device({topo::DeviceKind::Nic, node + ".nic0", n, 0, 0, false});
    c.add_duplex(cpu, sw, {topo::LinkKind::Pcie, pcie_Bps, 0.0});
    c.add_duplex(g, sw, {topo::LinkKind::Pcie, pcie_Bps, 0.0});
    c.add_duplex(nic, sw, {topo::LinkKind::Pcie, pcie_Bps, 0.0});
    c.add_duplex(nic, net, {topo::LinkKind::Network, nic_Bps, 0.0});
    c.set_gateway(g, nic);
  }
  c.set_shape(2, 1);
  return c;
}
}  // namespace

TEST(Replay, TheBatchCopySharesTheGpusPcieLinkWithItsNicTraffic) {
  // dp 2 across the nodes, negligible compute, one gradient bucket of S: the ring all-reduce
  // receives S per GPU over the switch -> GPU link (P), where a batch copy of S arrives too.
  // Alone each takes S / P; a pinned copy under the step halves both rates: 2 S / P; a pageable
  // one goes first, then the all-reduce: S / P + S / P, the copy's part shown as data wait.
  const double S = 40e6, P = 10e9;
  const topo::Cluster cluster = pcie_nodes(P, 4 * P);
  StepProgram p;
  p.dp = 2;
  p.layers = {negligible_layer(S, 0)};
  const double reduce_s = replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s;
  EXPECT_NEAR(reduce_s, S / P, 0.01 * S / P);
  p.batch_copy_bytes = S;
  p.batch_copy_Bps = 1e15;
  StepProgram copy_only = p;
  copy_only.layers = {negligible_layer(0, 0)};
  EXPECT_NEAR(replay_step(copy_only, cluster, coll::CommTuning{}, {}).step_time_s, S / P, 1e-6 * S / P);

  const ReplayResult pinned = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(pinned.step_time_s, 2 * S / P, 0.01 * S / P);
  EXPECT_NEAR(pinned.breakdown_s[kCatDpComm], pinned.step_time_s, 0.01 * S / P);  // the copy hides under it

  p.batch_copy_blocking = true;
  const ReplayResult pageable = replay_step(p, cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(pageable.step_time_s, 2 * S / P, 0.01 * S / P);
  EXPECT_NEAR(pageable.breakdown_s[kCatDataWait], S / P, 0.01 * S / P);
  EXPECT_NEAR(pageable.breakdown_s[kCatDpComm], S / P, 0.01 * S / P);

  // A copy held below its share of the link (by its own rate) leaves the rest to the NIC traffic:
  // a copy of S / 4 at P / 4 lasts S / P, the all-reduce moves 3 S / 4 meanwhile at 3 P / 4 and
  // the last S / 4 at P: 1.25 S / P.
  p.batch_copy_blocking = false;
  p.batch_copy_Bps = 0.25 * P;
  p.batch_copy_bytes = 0.25 * S;
  EXPECT_NEAR(replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s, 1.25 * S / P, 0.01 * S / P);
  p.batch_copy_bytes = 0.5 * S;  // outlasts the all-reduce (S / (0.75 P)): the step ends with the copy
  EXPECT_NEAR(replay_step(p, cluster, coll::CommTuning{}, {}).step_time_s, 2 * S / P, 0.01 * S / P);
}

TEST(Replay, EpOverlapPairsHideTheExpertAllToAllsUnderTheOtherMicroBatchsCompute) {
  // One stage, m micro-batches of L MoE layers: forward = dispatch all-to-all then compute t_f,
  // backward = compute t_b then the combine's all-to-all. In sequence every all-to-all is exposed:
  // m * L * (2c + t_f + t_b). Paired (ep_overlap), a forward runs beside the previous micro-batch's
  // backward: the GPU is busy m * L * (t_f + t_b) and the pairs' all-to-alls run under the other
  // chain's compute, except the first forward's and the last backward's, which have no partner,
  // and some at the pairs' edges (a pair ends with its backward's last combine).
  const double link_Bps = 100e9, bytes = 20e9, t_f = 1.0, t_b = 2.0;
  const double c = bytes / 2 / link_Bps;  // two ranks: each sends half its buffer (0.1 s)
  const int m = 4, layers = 4;
  StepProgram p;
  p.ep = 2;
  p.micro_batches = m;
  for (int l = 0; l < layers; ++l) {
    LayerProgram layer;
    layer.forward = {collective(Group::EP, coll::CollectiveOp::AllToAll, bytes), compute(t_f)};
    layer.backward = {compute(t_b), collective(Group::EP, coll::CollectiveOp::AllToAll, bytes)};
    p.layers.push_back(layer);
  }
  p.cp = 2;  // the expert group is the two context-parallel ranks (as above)
  const ReplayResult serial = replay_step(p, ideal_cluster(2, link_Bps), coll::CommTuning{}, {});
  EXPECT_NEAR(serial.step_time_s, m * layers * (2 * c + t_f + t_b), 1e-3);
  p.pair_forward_backward = true;
  const ReplayResult paired = replay_step(p, ideal_cluster(2, link_Bps), coll::CommTuning{}, {});
  const double busy = m * layers * (t_f + t_b);
  EXPECT_GE(paired.step_time_s, busy + 2 * layers * c - 1e-3);  // the unpaired first F and last B
  EXPECT_LT(paired.step_time_s, busy + 2 * layers * c + 0.75 * (m - 1) * layers * c);  // most of the rest hidden
  EXPECT_LT(paired.breakdown_s[kCatEpComm], 0.5 * serial.breakdown_s[kCatEpComm]);
}

TEST(Replay, OffloadedActivationsGoToTheHostAfterTheForwardAndComeBackOneLayerAhead) {
  // One rank per node on the PCIe switch of pcie_nodes (P each way), four layers of forward t_f
  // and backward t_b, each storing B. A layer's copy to the host runs under the next forward; the
  // backward's first layer waits for the last forward's copy out (B / P) and back (B / P); later
  // copies back run under the backward of the layer after them.
  const double P = 10e9, t_f = 1.0, t_b = 2.0;
  const int layers = 4;
  const topo::Cluster cluster = pcie_nodes(P, 4 * P);
  const auto program = [&](double bytes, int micro_batches) {
    StepProgram p;
    p.dp = 2;
    p.micro_batches = micro_batches;
    p.offload_activations = true;
    for (int l = 0; l < layers; ++l) {
      LayerProgram layer;
      layer.forward = {compute(t_f)};
      layer.backward = {compute(t_b)};
      layer.offload_bytes = bytes;
      p.layers.push_back(layer);
    }
    return p;
  };
  const double fast = 0.1 * P;  // B / P = 0.1 s
  const ReplayResult one = replay_step(program(fast, 1), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(one.step_time_s, layers * (t_f + t_b) + 0.2, 1e-6);
  EXPECT_NEAR(one.breakdown_s[kCatOffload], 0.2, 1e-6);
  EXPECT_NEAR(replay_step(program(fast, 2), cluster, coll::CommTuning{}, {}).step_time_s,
              2 * (layers * (t_f + t_b) + 0.2), 1e-6);
  // Copies slower than the compute (B / P = 3 s > t_b): the copies out share the device-to-host
  // direction back to back from the first forward's end (1 + 4 x 3 = 13 s), then each layer's
  // copy back (3 s) paces the backward: 13 + 3 x 3 + 3 + 2 = 27 s.
  const ReplayResult slow = replay_step(program(3 * P, 1), cluster, coll::CommTuning{}, {});
  EXPECT_NEAR(slow.step_time_s, 27.0, 1e-6);
  EXPECT_NEAR(slow.breakdown_s[kCatOffload], 27.0 - layers * (t_f + t_b), 1e-6);
  // Without offloading nothing crosses PCIe.
  StepProgram kept = program(3 * P, 1);
  kept.offload_activations = false;
  EXPECT_NEAR(replay_step(kept, cluster, coll::CommTuning{}, {}).step_time_s, layers * (t_f + t_b), 1e-6);
}
