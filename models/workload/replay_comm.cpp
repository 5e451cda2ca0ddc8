// The replay's collectives: communicator groups, collectives on them, gradient reduction, FSDP gathers, pipeline sends.
#include "models/workload/replay_builder.hpp"

#include <algorithm>

namespace stacksim::workload::replay_detail {

std::vector<std::vector<int>> StepBuilder::groups(Group g, int s) const { return communicator_groups(p_, g, s); }

sim::TaskId StepBuilder::add_group_collective(int s, Group g, coll::CollectiveOp op, double bytes,
                                              const std::vector<sim::TaskId>& deps, sim::TrackId track,
                                              uint16_t category, const coll::MoeDispatch& dispatch) {
  const auto gs = groups(g, s);
  if (gs.empty() || gs.front().size() < 2 || bytes <= 0) return sim::kNoTask;
  const sim::TaskId first = static_cast<sim::TaskId>(g_.size());
  std::vector<sim::TaskId> exits;
  for (const auto& ranks : gs) {
    coll::Collective c;
    c.op = op;
    c.ranks = ranks;
    c.bytes = bytes;
    c.dispatch = dispatch;
    // SM sharing is modelled by the companion task below, not by the flows.
    exits.push_back(
        coll::append_collective(g_, cluster_, link_res_, tuning_, c, deps, category, track, collective_cache_));
  }
  const sim::TaskId exit = exits.size() == 1 ? exits.front() : add_join(exits);
  spans_.push_back({s, category, first, exit});
  // Collectives off the compute stream overlap compute; their kernels hold a share of the SMs
  // for about their duration, which overlapped compute loses (max-min: the companion is bounded
  // at the share, compute takes the rest).
  if (g != Group::TP && g != Group::EP && tuning_.sm_fraction > 0) {
    coll::Collective c;
    c.op = op;
    c.ranks = gs.front();
    c.bytes = bytes;
    sim::TaskSpec sm;
    // Collectives of one shape repeat every micro-batch: estimate each shape once.
    const auto key = std::make_tuple(static_cast<int>(op), bytes, c.ranks);
    auto it = estimates_.find(key);
    if (it == estimates_.end()) it = estimates_.emplace(key, coll::estimate_seconds(cluster_, tuning_, c)).first;
    sm.activity.work = tuning_.sm_fraction * it->second;
    sm.activity.bound = tuning_.sm_fraction;
    sm.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
    const sim::TaskId id = g_.add(sm);
    for (sim::TaskId d : deps)
      if (d != sim::kNoTask) g_.add_dependency(d, id);
  }
  return exit;
}

void StepBuilder::run_collective_op(int s, const CostedOp& op, std::vector<sim::TaskId>& pending_overlap) {
  const uint16_t cat = comm_category(op.group);
  std::vector<sim::TaskId> deps{stages_[s].cursor};
  // Its one launch (a collective of a single rank is none; host_launch says when it is free).
  sim::TaskId host = sim::kNoTask;
  if (op.bytes > 0 && group_size(op.group) >= 2) host = host_launch(s, op.launches, op.host_sync).first;
  // A join gates the collective on its launch (the breakdown's wait ends where the join does).
  if (host != sim::kNoTask) {
    const sim::TaskId gate = add_join({});
    wait_for_launch(s, host, gate, stages_[s].cursor);
    g_.add_dependency(stages_[s].cursor, gate);
    deps = {gate};
  }
  const sim::TaskId exit =
      add_group_collective(s, op.group, op.op, op.bytes, deps, stages_[s].comm_now(), cat, op.dispatch);
  if (exit == sim::kNoTask) return;
  if (op.overlaps_next)
    pending_overlap.push_back(exit);  // joined after the next compute op
  else
    stages_[s].cursor = add_join({stages_[s].cursor, exit});
}

sim::TaskId StepBuilder::reduce_scatter_gradients(int s, double bytes, const std::vector<sim::TaskId>& deps) {
  StageState& st = stages_[s];
  sim::TaskId e =
      add_group_collective(s, Group::DpShard, coll::CollectiveOp::ReduceScatter, bytes, deps, st.dp_track, kCatDpComm);
  if (shard_ranks() < p_.dp * p_.cp) {
    std::vector<sim::TaskId> after = deps;
    if (e != sim::kNoTask) after = {e};
    const sim::TaskId ar = add_group_collective(s, Group::DpReplicate, coll::CollectiveOp::AllReduce,
                                                bytes / shard_ranks(), after, st.dp_track, kCatDpComm);
    if (ar != sim::kNoTask) e = ar;
  }
  return e;
}

sim::TaskId StepBuilder::fsdp_gather(int s, const LayerProgram& layer, sim::TaskId limiter) {
  StageState& st = stages_[s];
  sim::TaskId exit = sim::kNoTask;
  for (const auto& [group, bytes] :
       {std::pair{Group::DpShard, layer.param_bytes}, {Group::ExpertDp, layer.expert_param_bytes}}) {
    std::vector<sim::TaskId> deps{st.ag_cursor, limiter};
    sim::TaskId fetched = sim::kNoTask;
    if (p_.offload_params && bytes > 0) {
      // The shard lives in host memory: it crosses PCIe before the gather can start.
      fetched = add_host_copies(s, bytes / std::max(1, group_size(group)), false, deps, "parameter shard from host",
                                st.param_track, kCatDpComm);
      param_copies_[s].push_back(fetched);
      deps = {fetched};
    }
    // Per-module gathers (fsdp_gathers_per_layer > 1, dense parameters): one after another on the
    // gather stream, each of its share of the bytes, each paying the ring's latency.
    const int pieces = group == Group::DpShard ? std::max(1, p_.fsdp_gathers_per_layer) : 1;
    sim::TaskId e = sim::kNoTask;
    for (int k = 0; k < pieces; ++k) {
      const sim::TaskId g =
          add_group_collective(s, group, coll::CollectiveOp::AllGather, bytes / pieces, deps, st.dp_track, kCatDpComm);
      if (g == sim::kNoTask) break;
      e = g;
      deps = {g};
    }
    if (e == sim::kNoTask) e = fetched;  // nothing to gather (one rank): the fetch alone
    if (e != sim::kNoTask) exit = st.ag_cursor = e;
  }
  return exit;
}

void StepBuilder::link_stages(int mb, int from_vs, int to_vs, bool backward) {
  const int from_s = rank_of_position(from_vs), to_s = rank_of_position(to_vs);
  const sim::TaskId produced = item_exit_.at(key(mb, from_vs, backward));
  const sim::TaskId consumer = item_entry_.at(key(mb, to_vs, backward));
  if (from_s == to_s || p_.p2p_bytes <= 0) {
    g_.add_dependency(produced, consumer);
    return;
  }
  const sim::TaskId first = static_cast<sim::TaskId>(g_.size());
  std::vector<sim::TaskId> exits;
  for (int t = 0; t < p_.tp; ++t)
    for (int c = 0; c < p_.cp; ++c) {
      coll::Collective x;
      x.op = coll::CollectiveOp::SendRecv;
      const int src = global_rank(p_, t, c, 0, from_s), dst = global_rank(p_, t, c, 0, to_s);
      x.ranks = {src, dst};
      x.peer = dst;
      x.bytes = p_.p2p_bytes;
      exits.push_back(coll::append_collective(g_, cluster_, link_res_, tuning_, x, {produced}, kCatPpComm,
                                              stages_[to_s].pp_track, collective_cache_));
    }
  const sim::TaskId sent = exits.size() == 1 ? exits.front() : add_join(exits);
  spans_.push_back({to_s, kCatPpComm, first, sent});
  // Scattered slices are gathered by the receiving stage before it uses them.
  const sim::TaskId gathered =
      p_.p2p_gather_bytes > 0 ? add_group_collective(to_s, Group::TP, coll::CollectiveOp::AllGather,
                                                     p_.p2p_gather_bytes, {sent}, stages_[to_s].pp_track, kCatPpComm)
                              : sim::kNoTask;
  g_.add_dependency(gathered != sim::kNoTask ? gathered : sent, consumer);
  // Megatron's blocking p2p (batch_isend_irecv, then wait): the sender's next item starts only
  // once the send is through.
  if (p_.blocking_p2p) {
    const auto next = next_items_.find(key(mb, from_vs, backward));
    if (next != next_items_.end()) {
      for (uint64_t k : next->second) g_.add_dependency(sent, item_entry_.at(k));
      spans_.push_back({from_s, kCatPpComm, first, sent});
    }
  }
}

}  // namespace stacksim::workload::replay_detail
