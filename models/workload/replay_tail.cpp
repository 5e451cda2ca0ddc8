// The step's tail (data-parallel reductions, optimizer, offloaded phases) and the per-stage breakdown.
#include "models/workload/bucket_fill.hpp"
#include "models/workload/replay_builder.hpp"

namespace stacksim::workload::replay_detail {

void StepBuilder::build_tail() {
  std::vector<sim::TaskId> ends;
  for (int s = 0; s < p_.pp; ++s) {
    StageState& st = stages_[s];
    std::vector<sim::TaskId> before_optimizer{st.cursor, st.rs_cursor, st.ag_cursor};
    // ZeRO-Offload: each reduced bucket's shard to the host as it completes.
    const int node = cluster_.node_of_gpu(st.rep);
    const sim::TrackId host_track = p_.offload_optimizer
                                        ? g_.add_track("host", "optimizer offload (stage " + std::to_string(s) + ")")
                                        : sim::kNoTrack;
    // The host phase so far: ZeRO-3's per-layer gradient copies (build_item), then the buckets'.
    std::vector<sim::TaskId>& host_phase = offload_tasks_[s];
    const auto offload_bucket = [&](sim::TaskId reduced, double bytes, Group g) {
      if (!p_.offload_optimizer || reduced == sim::kNoTask) return;
      host_phase.push_back(add_host_copies(s, bytes / group_size(g) * p_.offload_d2h_per_grad_byte, true, {reduced},
                                           "gradient shard to host", host_track));
    };
    if (p_.zero < 3 && reduces_gradients()) {
      // Gradient buckets in backward order, each reduced once its last gradient is ready; the
      // routed experts' buffers over their own group, on their own communicator's stream.
      BucketFill dense(p_.dp_bucket_bytes), experts(p_.dp_bucket_bytes);
      for (size_t i = 0; i < st.grads_ready.size(); ++i) {
        const sim::TaskId ready = p_.overlap_grad_reduce ? st.grads_ready[i].task : st.cursor;
        const bool last = i + 1 == st.grads_ready.size();
        if (dense.add(st.grads_ready[i].bytes, last)) {
          const double bucket = dense.take();
          const sim::TaskId e = p_.zero == 0 ? add_group_collective(s, Group::DP, coll::CollectiveOp::AllReduce, bucket,
                                                                    {st.dp_cursor, ready}, st.dp_track, kCatDpComm)
                                             : reduce_scatter_gradients(s, bucket, {st.dp_cursor, ready});
          if (e != sim::kNoTask) st.dp_cursor = e;
          offload_bucket(e, bucket, Group::DpShard);
        }
        if (double bucket = 0; experts.add(st.grads_ready[i].expert_bytes, last) && (bucket = experts.take()) > 0) {
          const sim::TaskId e = add_group_collective(
              s, Group::ExpertDp, p_.zero == 0 ? coll::CollectiveOp::AllReduce : coll::CollectiveOp::ReduceScatter,
              bucket, {st.edp_cursor, ready}, st.dp_track, kCatDpComm);
          if (e != sim::kNoTask) st.edp_cursor = e;
          offload_bucket(e, bucket, Group::ExpertDp);
        }
      }
      before_optimizer.push_back(st.dp_cursor);
      before_optimizer.push_back(st.edp_cursor);
    }
    st.cursor = add_join(before_optimizer);
    run_ops(s, p_.optimizer);
    if (p_.offload_optimizer) {
      // Adam on the host over the shards of every rank on the node (DRAM-bound, shared), then
      // this rank's 16-bit shard back to the GPU (offloaded parameters stay on the host).
      double shard16 = 0;  // this rank's 16-bit parameter shard, dense and expert
      for (int c = 0; c < chunks(); ++c)
        shard16 += chunk_param_bytes(s, c) / group_size(Group::DpShard) +
                   chunk_expert_param_bytes(s, c) / std::max(1, group_size(Group::ExpertDp));
      if (host_phase.empty())  // nothing reduced (one data-parallel rank): the whole gradient, in fp32
        host_phase.push_back(add_host_copies(s, 2.0 * shard16, true, {st.cursor}, "gradients to host", host_track));
      int node_gpus = 0;
      for (int r = 0; r < cluster_.num_gpus(); ++r) node_gpus += cluster_.node_of_gpu(r) == node;
      sim::TaskSpec adam;
      adam.activity.work = node_gpus * shard16 / 2.0 * p_.offload_host_bytes_per_param;
      adam.activity.bound = p_.host_memory_Bps;
      adam.category = kCatOptimizer;
      adam.track = host_track;
      adam.name = g_.intern("host Adam (CPU, the node's shards)");
      const sim::TaskId step = g_.add(adam);
      for (sim::TaskId d : host_phase) g_.add_dependency(d, step);
      g_.add_dependency(st.cursor, step);
      host_phase.push_back(step);
      st.cursor = step;
      if (!p_.offload_params) {
        st.cursor = add_host_copies(s, shard16, false, {step}, "updated 16-bit shard to GPU", host_track);
        host_phase.push_back(st.cursor);
      }
    }
    if (p_.zero >= 1 && p_.zero <= 2 && reduces_gradients() && !p_.overlap_param_gather) {
      double bytes = 0, expert_bytes = 0;
      for (int c = 0; c < chunks(); ++c) {
        bytes += chunk_param_bytes(s, c);
        expert_bytes += chunk_expert_param_bytes(s, c);
      }
      const sim::TaskId e = add_group_collective(s, Group::DpShard, coll::CollectiveOp::AllGather, bytes, {st.cursor},
                                                 st.dp_track, kCatDpComm);
      const sim::TaskId expert_e = add_group_collective(s, Group::ExpertDp, coll::CollectiveOp::AllGather, expert_bytes,
                                                        {st.cursor}, st.dp_track, kCatDpComm);
      st.cursor = add_join({st.cursor, e, expert_e});
    }
    ends.push_back(st.cursor);
    stage_end_.push_back(st.cursor);
  }
  if (batch_copy_ != sim::kNoTask) ends.push_back(batch_copy_);
  add_join(ends);
}

std::vector<double> StepBuilder::breakdown(const sim::ExecutionResult& r, int s) const {
  std::vector<double> out(kNumCategories, 0.0);
  struct Edge {
    int64_t t;
    int delta;
    uint16_t cat;
    bool compute;
  };
  std::vector<Edge> edges;
  // Compute tasks are split into their parts' categories in proportion to the parts' times (a
  // task slowed by sharing its GPU stretches every part alike).
  for (size_t id = 0; id < task_stage_.size(); ++id) {
    if (task_stage_[id] != s) continue;
    if (r.end[id] <= r.start[id]) continue;
    const auto [p0, np] = task_parts_[id];
    double nominal = 0;
    for (uint32_t k = p0; k < p0 + np; ++k) nominal += parts_[k].second;
    int64_t t = r.start[id].ps();
    const int64_t span = (r.end[id] - r.start[id]).ps();
    int64_t used = 0;
    for (uint32_t k = p0; k < p0 + np; ++k) {
      const int64_t d = k + 1 == p0 + np
                            ? span - used
                            : static_cast<int64_t>(span * (nominal > 0 ? parts_[k].second / nominal : 0.0));
      if (d <= 0) continue;
      edges.push_back({t, +1, parts_[k].first, true});
      edges.push_back({t + d, -1, parts_[k].first, true});
      t += d;
      used += d;
    }
  }
  // The GPU waiting for its kernels' launches: from the end of its previous work (or the
  // launches' start, if later) to the launches' end, where they were what it waited for.
  for (const LaunchWait& w : launch_waits_) {
    if (w.stage != s || r.start[w.gpu] > r.end[w.host]) continue;
    const int64_t begin = std::max(r.start[w.host].ps(), w.previous == sim::kNoTask ? 0 : r.end[w.previous].ps());
    if (r.end[w.host].ps() <= begin) continue;
    edges.push_back({begin, +1, kCatHostLaunch, false});
    edges.push_back({r.end[w.host].ps(), -1, kCatHostLaunch, false});
  }
  for (const CommSpan& sp : spans_) {
    if (sp.stage != s) continue;
    int64_t begin = r.end[sp.exit].ps();
    for (sim::TaskId t = sp.first; t <= sp.exit; ++t) begin = std::min(begin, r.start[t].ps());
    if (r.end[sp.exit].ps() <= begin) continue;
    edges.push_back({begin, +1, sp.category, false});
    edges.push_back({r.end[sp.exit].ps(), -1, sp.category, false});
  }
  // Host-side work the GPU may wait on, where it has nothing to run: the offloaded optimizer's
  // phase (copies and the host's Adam), offloaded parameter shards (the first leg of their
  // gathers) and offloaded activations.
  const auto waits_on = [&](const std::vector<sim::TaskId>& tasks, uint16_t category) {
    for (sim::TaskId t : tasks)
      if (t != sim::kNoTask && r.end[t] > r.start[t]) {
        edges.push_back({r.start[t].ps(), +1, category, false});
        edges.push_back({r.end[t].ps(), -1, category, false});
      }
  };
  waits_on(offload_tasks_[s], kCatOptimizer);
  waits_on(param_copies_[s], kCatDpComm);
  waits_on(activation_copies_[s], kCatOffload);
  // The batch copy: a pageable one holds the stage from its start; a pinned one only where it
  // outlasts the stage's own work.
  if (batch_copy_ != sim::kNoTask) {
    const int64_t begin = p_.batch_copy_blocking ? r.start[batch_copy_].ps()
                                                 : std::max(r.start[batch_copy_].ps(), r.end[stage_end_[s]].ps());
    if (r.end[batch_copy_].ps() > begin) {
      edges.push_back({begin, +1, kCatDataWait, false});
      edges.push_back({r.end[batch_copy_].ps(), -1, kCatDataWait, false});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.t != b.t) return a.t < b.t;
    return a.delta < b.delta;  // ends before starts at the same instant
  });
  std::array<int, kNumCategories> compute_active{}, comm_active{};
  int running = 0;  // compute parts active now (the sum of compute_active)
  static constexpr std::array<uint16_t, 9> kCommPriority = {kCatTpComm,  kCatEpComm,   kCatCpComm,
                                                            kCatPpComm,  kCatDpComm,   kCatHostLaunch,
                                                            kCatOffload, kCatDataWait, kCatOptimizer};
  int64_t prev = 0;
  const int64_t end = r.makespan.ps();
  size_t i = 0;
  auto attribute = [&](int64_t a, int64_t b) {
    if (b <= a) return;
    const double dt = static_cast<double>(b - a) * 1e-12;
    // Concurrent compute (DualPipe's F&B pairs share the GPU) splits the interval evenly
    // among the running parts; one part alone takes all of it.
    if (running == 1) {
      for (uint16_t c = 0;; ++c)
        if (compute_active[c] > 0) {
          out[c] += dt;
          return;
        }
    }
    if (running > 1) {
      for (uint16_t c = 0; c < kNumCategories; ++c) out[c] += dt * compute_active[c] / running;
      return;
    }
    for (uint16_t c : kCommPriority)
      if (comm_active[c] > 0) {
        out[c] += dt;
        return;
      }
    out[p_.pp > 1 ? kCatPipelineBubble : kCatIdle] += dt;
  };
  while (i < edges.size()) {
    const int64_t t = edges[i].t;
    attribute(prev, std::min(t, end));
    prev = std::max(prev, std::min(t, end));
    for (; i < edges.size() && edges[i].t == t; ++i) {
      (edges[i].compute ? compute_active : comm_active)[edges[i].cat] += edges[i].delta;
      if (edges[i].compute) running += edges[i].delta;
    }
  }
  attribute(prev, end);
  return out;
}

}  // namespace stacksim::workload::replay_detail
