// The replay's pipeline: each schedule item's ops on its stage, and the order the schedule puts them in.
#include "models/workload/bucket_fill.hpp"
#include "models/workload/replay_builder.hpp"

namespace stacksim::workload::replay_detail {

void StepBuilder::build_item(int s, const PipelineItem& it) {
  StageState& st = stages_[s];
  const int vs = vstage(it.chunk, s);
  const auto [l0, l1] = layer_range(model_stage(vs));
  // Offloaded parameters are fetched per layer even with nothing to gather or reduce (one rank).
  const bool fsdp = p_.zero >= 3 && (reduces_gradients() || p_.offload_params);
  const bool last_mb = it.micro_batch == last_micro_batch(it.chunk);
  // FSDP under a pipeline (torchtitan: FSDP2 + torch.distributed.pipelining) keeps each stage's
  // gathered parameters for all its micro-batches (reshard_after_forward is off with PP, "to avoid
  // per-microbatch all-gathers") and reduce-scatters the gradients after the last micro-batch
  // (the schedule turns gradient sync off before it). Without a pipeline every micro-batch
  // gathers in forward and backward and reduce-scatters (FSDP's FULL_SHARD).
  const bool keep_gathered = fsdp && p_.pp > 1;
  const bool gather = fsdp && (!keep_gathered || (!it.backward && it.micro_batch == 0));
  const bool reduce_now = !keep_gathered || last_mb;

  const bool gathered_ahead = !it.backward && it.micro_batch == first_micro_batch(it.chunk) &&
                              it.chunk < static_cast<int>(st.chunk_layer_gather.size());
  std::vector<sim::TaskId> gate_deps{st.cursor};
  if (gathered_ahead) gate_deps.push_back(st.chunk_head_gather[it.chunk]);
  st.cursor = add_join(gate_deps);
  const sim::TaskId entry = st.cursor;
  item_entry_[key(it, s)] = entry;

  std::vector<sim::TaskId> layer_done;  // compute end per processed layer (for FSDP prefetch)
  const int chunk_first_layer = l0;     // (clang 14 cannot capture a structured binding)
  auto run_layer = [&](int l, const std::vector<CostedOp>& ops) {
    if (gathered_ahead) st.cursor = add_join({st.cursor, st.chunk_layer_gather[it.chunk][l - chunk_first_layer]});
    if (gather) {
      const sim::TaskId limiter = layer_done.size() >= 2 ? layer_done[layer_done.size() - 2] : entry;
      const sim::TaskId gathered = fsdp_gather(s, p_.layers[l], limiter);
      st.cursor = add_join({st.cursor, gathered});
      if (p_.layers[l].fsdp_gather_copy_s > 0) {  // FSDP 2's copy-out, on the compute stream
        CostedOp copy;
        copy.name = "fsdp gather copy-out";
        copy.category = kCatElementwise;
        copy.seconds = p_.layers[l].fsdp_gather_copy_s;
        add_compute(s, &copy, &copy + 1);
      }
    }
    run_ops(s, ops);
    layer_done.push_back(st.cursor);
  };

  // A zero-bubble backward runs the input gradients only; its `weight` item the wgrads (and
  // then hands the gradients to data-parallel reduction).
  const Part part = it.weight ? Part::Weight : it.defer_weight ? Part::Input : Part::Both;
  if (!it.backward) {
    if (first_position(vs)) run_ops(s, p_.pre_forward);
    std::vector<sim::TaskId>* to_host = nullptr;
    if (p_.offload_activations) (to_host = &offloaded_[key(it, s)])->assign(l1 - l0, sim::kNoTask);
    for (int l = l0; l < l1; ++l) {
      run_layer(l, p_.layers[l].forward);
      // The layer's saved activations to host memory, off the compute stream.
      if (to_host) {
        (*to_host)[l - l0] = add_host_copies(s, p_.layers[l].offload_bytes, true, {st.cursor}, "activations to host",
                                             st.offload_track, kCatOffload);
        if ((*to_host)[l - l0] != sim::kNoTask) activation_copies_[s].push_back((*to_host)[l - l0]);
      }
    }
    if (last_position(vs)) run_ops(s, p_.post_forward);
  } else if (part == Part::Input) {
    if (last_position(vs)) run_ops(s, backward_part(p_.pre_backward, part));
    for (int l = l1 - 1; l >= l0; --l) run_layer(l, backward_part(p_.layers[l].backward, part));
    if (first_position(vs)) run_ops(s, backward_part(p_.post_backward, part));
  } else {
    // Gradients leave for data-parallel reduction as they are produced: FSDP reduce-scatters
    // each unit right away, the others bucket the last micro-batch's (build_tail).
    auto gradients_ready = [&](double bytes, double expert_bytes, double fsdp_prep_s) {
      if (fsdp) {
        if (!reduce_now) return;
        // FSDP's cast/copy of the unsharded gradient runs on the reduction stream ahead of
        // the reduce-scatter, sharing the GPU with the backward compute that goes on.
        std::vector<sim::TaskId> deps{st.rs_cursor, st.cursor};
        if (fsdp_prep_s > 0) deps = {side_stream_kernel(s, "fsdp gradient cast/copy", fsdp_prep_s, deps)};
        sim::TaskId rs = reduce_scatter_gradients(s, bytes, deps);
        if (rs != sim::kNoTask) deps = {rs};
        const sim::TaskId expert_rs = add_group_collective(s, Group::ExpertDp, coll::CollectiveOp::ReduceScatter,
                                                           expert_bytes, deps, st.dp_track, kCatDpComm);
        if (expert_rs != sim::kNoTask) rs = expert_rs;
        if (rs != sim::kNoTask) st.rs_cursor = rs;
        if (p_.offload_optimizer) {  // each reduced shard to the host's optimizer at once (fp32)
          const sim::TaskId ready = rs != sim::kNoTask ? rs : st.cursor;  // nothing to reduce: one rank
          for (const auto& [group, b] : {std::pair{Group::DpShard, bytes}, {Group::ExpertDp, expert_bytes}}) {
            const sim::TaskId copy =
                add_host_copies(s, b / std::max(1, group_size(group)) * p_.offload_d2h_per_grad_byte, true, {ready},
                                "gradient shard to host", st.dp_track);
            if (copy != sim::kNoTask) offload_tasks_[s].push_back(copy);
          }
        }
      } else if (last_mb) {
        st.grads_ready.push_back({st.cursor, bytes, expert_bytes});
      }
    };
    if (last_position(vs)) {
      run_ops(s, backward_part(p_.pre_backward, part));
      gradients_ready(p_.head_grad_bytes, 0.0, p_.head_fsdp_grad_prep_s);
    }
    // Offloaded activations come back one layer ahead: layer l's copy starts as the backward of
    // the layer after it starts, and layer l's backward waits for it.
    const auto offloaded = p_.offload_activations ? offloaded_.find(key(it.micro_batch, vs, false)) : offloaded_.end();
    sim::TaskId prefetch_gate = st.cursor;
    for (int l = l1 - 1; l >= l0; --l) {
      if (offloaded != offloaded_.end()) {
        const sim::TaskId back =
            add_host_copies(s, p_.layers[l].offload_bytes, false, {offloaded->second[l - l0], prefetch_gate},
                            "activations from host", st.offload_track, kCatOffload);
        if (back != sim::kNoTask) {
          activation_copies_[s].push_back(back);
          st.cursor = add_join({st.cursor, back});
        }
        prefetch_gate = st.cursor;
      }
      run_layer(l, backward_part(p_.layers[l].backward, part));
      gradients_ready(p_.layers[l].grad_bytes, p_.layers[l].expert_grad_bytes, p_.layers[l].fsdp_grad_prep_s);
    }
    if (first_position(vs)) {
      run_ops(s, backward_part(p_.post_backward, part));
      gradients_ready(p_.embedding_grad_bytes, 0.0, p_.embedding_fsdp_grad_prep_s);
    }
  }
  item_exit_[key(it, s)] = st.cursor;
}

const std::vector<CostedOp>& StepBuilder::backward_part(const std::vector<CostedOp>& ops, Part part) {
  if (part == Part::Both) return ops;
  auto it = split_cache_.find(&ops);
  if (it == split_cache_.end()) {
    std::pair<std::vector<CostedOp>, std::vector<CostedOp>> split;
    for (const CostedOp& op : ops) (op.weight_grad ? split.second : split.first).push_back(op);
    it = split_cache_.emplace(&ops, std::move(split)).first;
  }
  return part == Part::Input ? it->second.first : it->second.second;
}

void StepBuilder::build_pipeline() {
  const bool zero12_overlapped_gather = p_.zero >= 1 && p_.zero <= 2 && p_.overlap_param_gather && reduces_gradients();
  for (int s = 0; s < p_.pp; ++s) {
    if (zero12_overlapped_gather) {
      // Steady state: the updated parameters are gathered bucket by bucket (the gradient
      // buckets' size, whole layers) in forward order while the first micro-batch runs forward,
      // each layer waiting only for its own bucket (Megatron-Core's overlap_param_gather: a
      // bucket's all-gather is dispatched ahead and its modules' forward pre-hooks wait for it).
      // Routed experts with a data-parallel group of their own are in buffers of their own
      // (Megatron-Core's expert-parallel buffers), bucketed and gathered over that group.
      StageState& st = stages_[s];
      struct Buffer {
        Group group;
        sim::TaskId previous = sim::kNoTask;  // its gathers run one after another
      };
      Buffer dense{Group::DpShard}, experts{Group::ExpertDp};
      auto gather = [&](Buffer& b, double bytes) {
        const sim::TaskId g = add_group_collective(s, b.group, coll::CollectiveOp::AllGather, bytes, {b.previous},
                                                   st.dp_track, kCatDpComm);
        if (g != sim::kNoTask) b.previous = g;
        return g;
      };
      // The gather each layer of [l0, l1) waits for: the buffer's bytes (`field` of each layer,
      // after `leading` bytes) in buckets of dp_bucket_bytes, whole layers, in forward order.
      auto bucketed = [&](Buffer& b, int l0, int l1, double leading, double LayerProgram::*field) {
        std::vector<sim::TaskId> of_layer(l1 - l0, sim::kNoTask);
        BucketFill bucket(p_.dp_bucket_bytes, leading);
        for (int l = l0, first = l0; l < l1; ++l) {
          if (!bucket.add(p_.layers[l].*field, l + 1 == l1)) continue;
          const sim::TaskId g = gather(b, bucket.take());
          for (int k = first; k <= l; ++k) of_layer[k - l0] = g;
          first = l + 1;
        }
        return of_layer;
      };
      for (int c = 0; c < chunks(); ++c) {
        const int vs = vstage(c, s);
        const auto [l0, l1] = layer_range(model_stage(vs));
        const bool head = first_position(vs) || last_position(vs);
        const double head_bytes = head ? p_.embedding_param_bytes : 0.0;
        std::vector<sim::TaskId> layers = bucketed(dense, l0, l1, head_bytes, &LayerProgram::param_bytes);
        const std::vector<sim::TaskId> expert_layers =
            bucketed(experts, l0, l1, 0.0, &LayerProgram::expert_param_bytes);
        for (int k = 0; k < l1 - l0; ++k)
          if (expert_layers[k] != sim::kNoTask) layers[k] = add_join({layers[k], expert_layers[k]});
        // The embedding/output layer travels in the chunk's first bucket (alone if it has no layer).
        st.chunk_head_gather.push_back(!head ? sim::kNoTask : l1 > l0 ? layers.front() : gather(dense, head_bytes));
        st.chunk_layer_gather.push_back(std::move(layers));
      }
    }
    // Items in order. An item marked overlap_next runs beside the next one: both start together
    // once both inputs are in (DualPipe's F&B chunk waits for both receives), share the GPU,
    // and what follows waits for both.
    std::vector<uint64_t> previous;  // the item(s) the next item follows
    sim::TaskId pair_start = sim::kNoTask, pair_first_exit = sim::kNoTask;
    std::vector<uint64_t> pair_keys;
    for (const PipelineItem& it :
         stage_schedule(schedule_kind(), p_.pp, p_.vp, p_.micro_batches, s, p_.pair_forward_backward)) {
      StageState& st = stages_[s];
      const bool second_of_pair = pair_start != sim::kNoTask;
      if (it.overlap_next) pair_start = st.cursor = add_join({st.cursor});
      st.on_paired_tracks = second_of_pair;  // the trace keeps concurrent slices on their own tracks
      build_item(s, it);
      st.on_paired_tracks = false;
      const uint64_t k = key(it, s);
      if (p_.blocking_p2p)  // only blocking sends need to know what follows an item
        for (uint64_t prev : previous) next_items_[prev].push_back(k);
      if (it.overlap_next) {
        pair_first_exit = st.cursor;
        st.cursor = pair_start;
        pair_keys = {k};
        continue;  // `previous` stays: the pair's second item follows it too
      }
      if (second_of_pair) {
        st.cursor = add_join({pair_first_exit, st.cursor});
        pair_keys.push_back(k);
        for (uint64_t pk : pair_keys) item_entry_[pk] = pair_start;  // inputs gate both
        pair_start = sim::kNoTask;
        previous = pair_keys;
      } else {
        previous = {k};
      }
    }
  }
  // Activations forward and gradients backward between consecutive positions of each
  // micro-batch's pipeline.
  for (int mb = 0; mb < p_.micro_batches; ++mb) {
    const int dir = dualpipe() && mb >= p_.micro_batches / 2 ? 1 : 0;
    const int begin = dir * p_.pp, end = dualpipe() ? begin + p_.pp : positions();
    for (int vs = begin; vs < end; ++vs) {
      if (vs > begin) link_stages(mb, vs - 1, vs, false);
      if (vs < end - 1) link_stages(mb, vs + 1, vs, true);
    }
  }
}

std::pair<int, int> StepBuilder::layer_range(int vs) const {
  if (!p_.vstage_begin.empty()) return {p_.vstage_begin[vs], p_.vstage_begin[vs + 1]};
  const int per = static_cast<int>(p_.layers.size()) / (p_.pp * p_.vp);
  return {vs * per, (vs + 1) * per};
}

double StepBuilder::chunk_param_bytes(int s, int chunk) const {
  const int vs = vstage(chunk, s);
  const auto [l0, l1] = layer_range(model_stage(vs));
  double b = 0;
  for (int l = l0; l < l1; ++l) b += p_.layers[l].param_bytes;
  if (first_position(vs) || last_position(vs)) b += p_.embedding_param_bytes;
  return b;
}

double StepBuilder::chunk_expert_param_bytes(int s, int chunk) const {
  const auto [l0, l1] = layer_range(model_stage(vstage(chunk, s)));
  double b = 0;
  for (int l = l0; l < l1; ++l) b += p_.layers[l].expert_param_bytes;
  return b;
}

}  // namespace stacksim::workload::replay_detail
