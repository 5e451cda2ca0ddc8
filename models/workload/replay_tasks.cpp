// The replay's compute tasks, the host thread's kernel launches and host<->GPU copies.
#include "models/workload/replay_builder.hpp"

#include "models/workload/host_copies.hpp"

namespace stacksim::workload::replay_detail {

sim::TaskId StepBuilder::add_join(const std::vector<sim::TaskId>& deps, sim::TrackId track) {
  sim::TaskSpec t;
  t.track = sim::kNoTrack;
  (void)track;
  const sim::TaskId id = g_.add(t);
  for (sim::TaskId d : deps)
    if (d != sim::kNoTask) g_.add_dependency(d, id);
  return id;
}

sim::TaskId StepBuilder::side_stream_kernel(int s, const char* name, double seconds,
                                            const std::vector<sim::TaskId>& deps) {
  sim::TaskSpec t;
  t.activity.work = seconds;
  t.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
  t.category = kCatElementwise;
  t.track = stages_[s].dp_track;
  t.name = g_.intern(name);
  const sim::TaskId id = g_.add(t);
  for (sim::TaskId d : deps)
    if (d != sim::kNoTask) g_.add_dependency(d, id);
  return id;
}

StepBuilder::Launches StepBuilder::host_launch(int s, int launches, bool sync) {
  Launches out;
  if (!host_modelled() || launches <= 0) return out;
  StageState& st = stages_[s];
  if (launches_free_ && st.host_now() != sim::kNoTask) return out;  // only the first launch counts
  if (launches_free_) launches = 1;
  // The stage's first launch comes after the step's fixed host work (StepProgram::host_step_s)
  // and, the host thread's too, a blocking batch copy (pageable, or loaded by the process itself).
  const bool step_start = !st.on_paired_tracks && st.host == sim::kNoTask;
  auto add = [&](int n, const char* name, bool after_step_work) {
    sim::TaskSpec t;
    t.activity.latency = sim::Time::from_seconds(n * p_.host_launch_s + (after_step_work ? p_.host_step_s : 0.0));
    t.category = kCatHostLaunch;
    t.track = st.on_paired_tracks ? st.paired_host_track : st.host_track;
    t.name = g_.intern(name);
    const sim::TaskId id = g_.add(t);
    sim::TaskId& chain = st.host_now();
    if (chain != sim::kNoTask) g_.add_dependency(chain, id);
    if (after_step_work && p_.batch_copy_blocking && batch_copy_ != sim::kNoTask) g_.add_dependency(batch_copy_, id);
    chain = id;
    return id;
  };
  const char* first = sync                               ? "kernel launch (after a host sync)"
                      : step_start && p_.host_step_s > 0 ? "step host work + kernel launch"
                                                         : "kernel launches";
  out.first = add(1, first, step_start);
  if (sync) g_.add_dependency(st.cursor, out.first);
  if (launches > 1) out.rest = add(launches - 1, "kernel launches", false);
  return out;
}

bool StepBuilder::host_stays_ahead() const {
  if (paired()) return false;
  struct Walk {
    double behind_s = 0, surplus_s = 0;  // the furthest behind along the list; its net lead gained
    bool sync = false;
  };
  // `lead_s`: where the list starts relative to its own ops (FSDP 2's copy-out before a layer,
  // a launched kernel outside the lists, can only count against it: it may not run).
  const auto walk = [&](const std::vector<CostedOp>& ops, double lead_s = 0) {
    Walk w;
    w.behind_s = std::max(0.0, -lead_s);
    for (const CostedOp& op : ops) {
      w.sync = w.sync || op.host_sync;
      lead_s += (op.kind == CostedOp::Kind::Compute ? op.seconds : 0.0) - op.launches * p_.host_launch_s;
      w.behind_s = std::max(w.behind_s, -lead_s);
    }
    w.surplus_s = lead_s;
    return w;
  };
  if (p_.pre_forward.empty()) return false;  // the step's first list is then a layer's
  const Walk first = walk(p_.pre_forward);
  if (first.sync || first.behind_s > 0 || first.surplus_s < 0) return false;
  double least_surplus_s = first.surplus_s;
  std::vector<Walk> walks;
  const auto add = [&](const std::vector<CostedOp>& ops, double lead_s) {
    if (ops.empty()) return true;
    walks.push_back(walk(ops, lead_s));
    least_surplus_s = std::min(least_surplus_s, walks.back().surplus_s);
    return !walks.back().sync && walks.back().surplus_s >= 0;
  };
  if (!add(p_.post_forward, 0) || !add(p_.pre_backward, 0) || !add(p_.post_backward, 0) || !add(p_.optimizer, 0))
    return false;
  for (const LayerProgram& l : p_.layers) {
    const double copy_s = l.fsdp_gather_copy_s > 0 ? std::min(0.0, l.fsdp_gather_copy_s - p_.host_launch_s) : 0.0;
    if (!add(l.forward, copy_s) || !add(l.backward, copy_s)) return false;
  }
  for (const Walk& w : walks)
    if (w.behind_s > least_surplus_s) return false;
  return true;
}

void StepBuilder::wait_for_launch(int s, sim::TaskId host, sim::TaskId gpu, sim::TaskId previous) {
  g_.add_dependency(host, gpu);
  launch_waits_.push_back({s, host, gpu, previous});
}

sim::TaskId StepBuilder::add_compute(int s, const CostedOp* first, const CostedOp* last) {
  sim::TaskSpec t;
  double seconds = 0;
  int launches = 0;
  const uint32_t part0 = static_cast<uint32_t>(parts_.size());
  for (const CostedOp* op = first; op != last; ++op) {
    seconds += op->seconds;
    launches += op->launches;
    parts_.push_back({op->category, op->seconds});
  }
  const sim::TaskId previous = stages_[s].cursor;
  const Launches host = host_launch(s, launches, first->host_sync);
  t.activity.work = seconds;
  t.activity.usages = {{gpu_res_[stages_[s].rep], 1.0}};
  t.category = first->category;
  t.track = stages_[s].compute_now();
  const std::string name = last - first == 1 ? first->name : first->name + " .. " + (last - 1)->name;
  t.name = g_.intern(name);
  const sim::TaskId id = g_.add(t);
  g_.add_dependency(stages_[s].cursor, id);
  stages_[s].cursor = id;
  if (host.first != sim::kNoTask) wait_for_launch(s, host.first, id, previous);
  if (host.rest != sim::kNoTask) {  // the run ends no earlier than its last launch
    const sim::TaskId done = add_join({id});
    wait_for_launch(s, host.rest, done, id);
    stages_[s].cursor = done;
  }
  if (task_stage_.size() <= id) task_stage_.resize(id + 1, -1);
  task_stage_[id] = s;
  if (task_parts_.size() <= id) task_parts_.resize(id + 1, {0, 0});
  task_parts_[id] = {part0, static_cast<uint32_t>(parts_.size() - part0)};
  return id;
}

void StepBuilder::run_ops(int s, const std::vector<CostedOp>& ops) {
  std::vector<sim::TaskId> pending;
  for (size_t i = 0; i < ops.size();) {
    if (ops[i].kind == CostedOp::Kind::Collective) {
      run_collective_op(s, ops[i], pending);
      ++i;
      continue;
    }
    // A collective overlapping "the next compute op" is joined after that op alone.
    size_t j = i + 1;
    if (pending.empty())  // a host sync starts a run of its own (the host waits before it)
      while (j < ops.size() && ops[j].kind == CostedOp::Kind::Compute && !ops[j].host_sync) ++j;
    add_compute(s, ops.data() + i, ops.data() + j);
    i = j;
    if (!pending.empty()) {
      pending.push_back(stages_[s].cursor);
      stages_[s].cursor = add_join(pending);
      pending.clear();
    }
  }
  if (!pending.empty()) {
    pending.push_back(stages_[s].cursor);
    stages_[s].cursor = add_join(pending);
  }
}

void StepBuilder::build_batch_copy() {
  if (p_.batch_copy_bytes <= 0) return;
  std::vector<char> copies_on_node(cluster_.num_nodes(), 0);
  for (const StageState& st : stages_) copies_on_node[cluster_.node_of_gpu(st.rep)] = 1;
  std::vector<int> ranks;
  for (int r = 0; r < cluster_.num_gpus(); ++r)
    if (copies_on_node[cluster_.node_of_gpu(r)]) ranks.push_back(r);
  const std::map<topo::LinkId, int> flows_on_link = host_copy_links(cluster_, ranks, false);
  sim::TaskSpec t;
  t.activity.work = p_.batch_copy_bytes;
  t.activity.bound = p_.batch_copy_Bps;
  for (const auto& [l, n] : flows_on_link) t.activity.usages.push_back({link_res_[l], static_cast<double>(n)});
  t.category = kCatDataWait;
  t.track = g_.add_track("host", p_.batch_copy_blocking ? "batch copy (before the step's first kernel)"
                                                        : "batch copy (the next step's, under this one)");
  t.name = g_.intern("host-to-device batch copy");
  batch_copy_ = g_.add(t);
  if (p_.batch_copy_blocking)
    for (StageState& st : stages_) g_.add_dependency(batch_copy_, st.cursor);
}

sim::TaskId StepBuilder::add_host_copies(int s, double bytes_per_gpu, bool to_host,
                                         const std::vector<sim::TaskId>& deps, const char* name, sim::TrackId track,
                                         uint16_t category) {
  if (bytes_per_gpu <= 0) return sim::kNoTask;
  // The stage's routes, each direction, worked out once (every gradient bucket copies).
  auto cached = stage_copy_links_.find({s, to_host});
  if (cached == stage_copy_links_.end()) {
    const std::vector<int> ranks = stage_ranks_on_node(p_, cluster_, s, cluster_.node_of_gpu(stages_[s].rep));
    cached = stage_copy_links_.emplace(std::make_pair(s, to_host), host_copy_links(cluster_, ranks, to_host)).first;
  }
  sim::TaskSpec t;
  t.activity.work = bytes_per_gpu;
  for (const auto& [l, n] : cached->second) t.activity.usages.push_back({link_res_[l], static_cast<double>(n)});
  t.category = category;
  t.track = track;
  t.name = g_.intern(name);
  const sim::TaskId id = g_.add(t);
  for (sim::TaskId d : deps)
    if (d != sim::kNoTask) g_.add_dependency(d, id);
  return id;
}

}  // namespace stacksim::workload::replay_detail
