// The fast tier of plan search: a step time from the same costed program the replay runs
// (build_step_program's per-layer CostedOps) and the same collective model (the tuner's analytical
// time of each collective, coll::estimate_seconds), without the engine. Closed forms replace the
// simulation where the replay's answer is arithmetic:
//  - a stage's forward and backward per micro-batch: its op lists in program order, TP/EP (and
//    CP all-gather/all-to-all) collectives on the stream, a collective that overlaps the next op
//    (CP's ring, async TP backward) as the longer of the two, plus the SMs an off-stream
//    collective takes (CommTuning::sm_fraction of its time, as the replay's companion task);
//  - the pipeline from each rank's item order (1F1B, interleaved: pipeline_walk.hpp; DualPipe:
//    dualpipe_walk.hpp) walked with these item times and the sends between stages, so the sends
//    on the critical path, the warm-up's waits at each chunk boundary and a heavier chunk (the loss
//    head) count as in the replay; in closed form for one stage or F&B pairs (ep_overlap): (m - 1)
//    periods of the slowest stage plus every stage's fill and drain, the fill divided by vp,
//    F&B pairs hiding each other's communication (fb_pair.hpp: the GPU shared max-min, and one
//    group's links when both chunks' collectives of that group run at once); GPipe's closed form;
//  - collectives that run at once beside one op share their group's links: their times add up;
//  - a collective runs on every group of its kind at once, on every stage: those on the first
//    group's nodes whose routes cross its links (the tp copies of a data-parallel reduction, the
//    stages of a pipeline in one server) share them, the most loaded link pacing each phase
//    (CollectiveTimes::sharing_first, coll::estimate_concurrent_seconds);
//  - data-parallel reduction as the replay buckets it: each bucket's collective starts when its
//    last gradient of the last micro-batch is ready, one after another on the stream, and only
//    what runs past the stage's backward is exposed; ZeRO-1/2 gathers under the next step's first
//    forward of each chunk (interleaved: chunk after chunk, a round of pp forwards apart), or
//    after the optimizer, FSDP's per-layer gathers and reduce-scatters paced by the
//    layers' compute (prefetch) with the first gather and the last reduce-scatter exposed;
//  - host launches: a stage's kernels cannot run faster than one thread launches them, and a host
//    sync exposes the launches after it;
//  - ZeRO-Offload: each reduced shard to the host as it is reduced, the host's Adam, the updated
//    shard back, offloaded parameters fetched before each gather, over the PCIe routes the stage's
//    GPUs on a node share (host_copies.hpp).
// What it leaves out (small where plans are ranked): link contention between collectives of
// different kinds (a reduction beside pipeline sends), activation offloading. The replay confirms
// the plans that rank best (plan_search.cpp).
#pragma once
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/workload/replay.hpp"
#include "topologies/cluster.hpp"

namespace stacksim::workload {

// Collective times memoised across plans (same op, ranks, bytes, dispatch: same time): plans that
// share tp, cp, ep or micro-batch share most of their collectives. Thread-safe; the values are a
// pure function of the key, so the results do not depend on which thread filled them.
class CollectiveTimes {
 public:
  CollectiveTimes(const topo::Cluster& cluster, const coll::CommTuning& tuning) : cluster_(cluster), tuning_(tuning) {}
  double seconds(const coll::Collective& c);
  // Collectives of one shape on several groups started together (coll::estimate_concurrent_seconds).
  double seconds(const std::vector<coll::Collective>& at_once);
  // Of groups that run a collective at once, the first and those whose ring routes cross one of
  // its links: the ones that can slow it (disjoint groups leave its time alone).
  std::vector<std::vector<int>> sharing_first(const std::vector<std::vector<int>>& groups);
  const topo::Cluster& cluster() const { return cluster_; }
  const coll::CommTuning& tuning() const { return tuning_; }

 private:
  const topo::Cluster& cluster_;
  const coll::CommTuning& tuning_;
  std::mutex mutex_;
  std::map<std::tuple<int, int, coll::MoeDispatch, double, std::vector<std::vector<int>>>, double> cache_;
  std::map<std::vector<std::vector<int>>, std::vector<std::vector<int>>> sharing_;
};

struct FastEstimate {
  double step_time_s = 0;
  int critical_stage = 0;
};

// Which layers run the same op lists (forward and backward apart): per layer, the first layer
// with its list. Worked out once per set of costed layers (FastTier keeps it with them), so a
// plan's estimate times each distinct list once without comparing lists.
struct LayerKinds {
  std::vector<int> forward, backward;
};
LayerKinds layer_kinds(const std::vector<LayerProgram>& layers);

FastEstimate fast_estimate_step(const StepProgram& program, CollectiveTimes& collectives);
// The same with the layers given apart (`program.layers` is ignored): plans that cost their
// layers alike share one set.
FastEstimate fast_estimate_step(const StepProgram& program, const std::vector<LayerProgram>& layers,
                                CollectiveTimes& collectives);
FastEstimate fast_estimate_step(const StepProgram& program, const std::vector<LayerProgram>& layers,
                                const LayerKinds& kinds, CollectiveTimes& collectives);

}  // namespace stacksim::workload
