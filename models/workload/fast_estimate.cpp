#include "models/workload/fast_estimate.hpp"

#include <algorithm>

#include "models/workload/bucket_fill.hpp"
#include "models/workload/dualpipe_walk.hpp"
#include "models/workload/fb_pair.hpp"
#include "models/workload/host_copies.hpp"
#include "models/workload/pipeline_walk.hpp"

namespace stacksim::workload {

namespace {

// One op list on a stage's stream, per micro-batch.
struct ListTime {
  double stream_s = 0;  // compute + collectives on the stream (the longer of two that overlap)
  double comm_s = 0;    // the part of stream_s spent waiting for collectives
  double wgrad_s = 0;   // weight-gradient GEMMs (DualPipe defers them into its bubbles)
  double launches = 0;  // kernels the host launches
  int syncs = 0;        // host syncs (the launches after one are exposed)
  ListTime& operator+=(const ListTime& o) {
    stream_s += o.stream_s, comm_s += o.comm_s, wgrad_s += o.wgrad_s, launches += o.launches, syncs += o.syncs;
    return *this;
  }
};

bool same_ops(const std::vector<CostedOp>& a, const std::vector<CostedOp>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].seconds != b[i].seconds || a[i].bytes != b[i].bytes ||
        a[i].group != b[i].group || a[i].op != b[i].op || a[i].overlaps_next != b[i].overlaps_next ||
        a[i].launches != b[i].launches)
      return false;
  return true;
}

class Estimator {
 public:
  Estimator(const StepProgram& p, const std::vector<LayerProgram>& layers, const LayerKinds& kinds, CollectiveTimes& ct)
      : p_(p), L_(layers), ct_(ct), kinds_(kinds) {}

  FastEstimate run() {
    const int chunks = dualpipe() ? 2 : p_.vp, pp = p_.pp, m = p_.micro_batches;
    const double h = p_.host_launch_s, sm = ct_.tuning().sm_fraction;
    // Per stage and chunk: forward and backward of one micro-batch.
    std::vector<std::vector<ListTime>> fwd(pp, std::vector<ListTime>(chunks)), bwd = fwd;
    std::vector<std::vector<double>> first_fwd_extra(pp, std::vector<double>(chunks, 0.0));
    std::vector<double> last_bwd_extra(pp, 0.0);
    const bool fsdp = p_.zero >= 3 && (reduces_gradients() || p_.offload_params);
    const bool keep_gathered = fsdp && pp > 1;
    for (int s = 0; s < pp; ++s)
      for (int c = 0; c < chunks; ++c) {
        const int vs = vstage(c, s);
        const auto [l0, l1] = layer_range(model_stage(vs));
        ListTime& f = fwd[s][c];
        ListTime& b = bwd[s][c];
        if (first_position(vs)) f += list(p_.pre_forward), b += list(p_.post_backward);
        if (last_position(vs)) f += list(p_.post_forward), b += list(p_.pre_backward);
        for (int l = l0; l < l1; ++l) {
          ListTime lf = layer_list(l, false), lb = layer_list(l, true);
          if (fsdp) {
            const LayerProgram& L = L_[l];
            const double ag = gather_s(L), rs = reduce_scatter_s(L);
            const double copy = L.fsdp_gather_copy_s;
            if (!keep_gathered) {
              // Per micro-batch: the gathers run ahead of the compute (prefetch), the layer's
              // reduce-scatter beside the next layer's backward; the longer stream paces.
              lf.stream_s = std::max(lf.stream_s + copy + sm * ag, ag);
              lb.stream_s = std::max(lb.stream_s + copy + L.fsdp_grad_prep_s + sm * (ag + rs), ag + rs);
              if (l == l0) lf.stream_s += ag, lb.stream_s += ag;  // nothing to hide the first gather under
            } else {
              // Kept gathered for every micro-batch: gathered before the chunk's first forward,
              // reduced after its last backward only (the cast/copy and the reduce-scatter's SMs
              // slow that one).
              first_fwd_extra[s][c] += std::max(0.0, ag - lf.stream_s) + (l == l0 ? ag : 0.0) + copy;
              last_bwd_extra[s] += L.fsdp_grad_prep_s + sm * rs;
            }
          }
          f += lf, b += lb;
        }
      }
    // p2p: one rank's activations to the next stage (the tp*cp pairs go in parallel on their own
    // links), then the receiving stage's gather of scattered slices.
    std::vector<double> p2p(pp, 0.0);  // stage s -> s+1 (mod pp)
    for (int s = 0; s < pp && pp > 1; ++s) {
      if (p_.p2p_bytes <= 0) break;
      coll::Collective x;
      x.op = coll::CollectiveOp::SendRecv;
      const int src = global_rank(p_, 0, 0, 0, s), dst = global_rank(p_, 0, 0, 0, (s + 1) % pp);
      x.ranks = {src, dst};
      x.peer = dst;
      x.bytes = p_.p2p_bytes;
      p2p[s] = ct_.seconds(x);
      if (p_.p2p_gather_bytes > 0) p2p[s] += coll_s(Group::TP, coll::CollectiveOp::AllGather, p_.p2p_gather_bytes);
    }
    double p2p_max = 0;
    for (double t : p2p) p2p_max = std::max(p2p_max, t);

    // Per stage per micro-batch: forward F, backward B, the steady-state period C.
    std::vector<double> F(pp), B(pp), C(pp), W(pp), FB(pp);  // FB: F + B, no faster than its launches
    std::vector<DualPipeRankTimes> dual(dualpipe() ? pp : 0);
    for (int s = 0; s < pp; ++s) {
      ListTime all;
      double f = 0, b = 0, fc = 0, bc = 0, w = 0;
      for (int c = 0; c < chunks; ++c) {
        f += fwd[s][c].stream_s, b += bwd[s][c].stream_s;
        fc += fwd[s][c].comm_s, bc += bwd[s][c].comm_s, w += bwd[s][c].wgrad_s;
        all += fwd[s][c], all += bwd[s][c];
      }
      if (p_.blocking_p2p && pp > 1 && !dualpipe()) {
        // A blocking send holds the stage until it is through: every item but the pipeline's ends.
        const double sends = chunks - (s == pp - 1 ? 1 : 0), recvs = chunks - (s == 0 ? 1 : 0);
        f += sends * p2p[s];
        b += recvs * p2p[(s + pp - 1) % pp];
      }
      // The host launches every kernel: a stage runs no faster than its thread launches them,
      // and after a host sync the launches that follow are exposed (the first one at least).
      double period = f + b;
      if (h > 0) period = std::max(period, all.launches * h) + all.syncs * h;
      FB[s] = period;
      if (paired()) {
        // F&B pairs: a forward chunk and a backward chunk (DualPipe: of the other direction) share
        // the GPU, each one's communication under the other's compute (pair_seconds).
        // The pair's two chunks launch from two host chains (the replay's paired chain), so a
        // pair is no faster than the busier of its two launch sequences.
        period = all.syncs * h;
        for (int c = 0; c < chunks; ++c) {
          const int cb = dualpipe() ? 1 - c : c;
          const double pair = std::max(pair_seconds(chain(s, c, false), chain(s, cb, true)),
                                       std::max(fwd[s][c].launches, bwd[s][cb].launches) * h);
          period += pair;
          if (dualpipe()) dual[s].pair[c] = pair + (fwd[s][c].syncs + bwd[s][cb].syncs) * h;
        }
      }
      (void)fc, (void)bc;
      F[s] = f, B[s] = b, C[s] = period, W[s] = w;
    }
    double c_max = 0, fb_sum = 0;
    for (int s = 0; s < pp; ++s) c_max = std::max(c_max, C[s]), fb_sum += FB[s];
    double pipe = 0;
    bool walked = false;  // the item walk holds the chunks' first-forward gathers
    std::vector<double> drain(pp, 0.0);
    if (p_.schedule == ScheduleKind::GPipe) {
      double fmax = 0, bmax = 0, fs = 0, bs = 0;
      for (int s = 0; s < pp; ++s) fmax = std::max(fmax, F[s]), bmax = std::max(bmax, B[s]), fs += F[s], bs += B[s];
      pipe = fs + bs + (m - 1) * (fmax + bmax) + 2 * (pp - 1) * p2p_max;
    } else if (dualpipe()) {
      // DualPipe: its item order walked with these item times (dualpipe_walk.hpp).
      const std::vector<double> ends = dualpipe_ends(fwd, bwd, dual, p2p);
      pipe = *std::max_element(ends.begin(), ends.end());
      for (int s = 0; s < pp; ++s) drain[s] = pipe - ends[s];
    } else if (pp > 1 && !paired()) {
      // 1F1B and interleaved 1F1B: the item order walked with these item times (pipeline_walk.hpp),
      // each chunk's kept FSDP gathers in its first forward.
      const std::vector<double> ends = pipeline_ends(fwd, bwd, p2p, first_fwd_extra);
      pipe = *std::max_element(ends.begin(), ends.end());
      for (int s = 0; s < pp; ++s) drain[s] = pipe - ends[s];
      walked = true;
    } else {
      // 1F1B's closed form (one stage, or F&B pairs): (m - 1) periods of the slowest stage plus
      // every stage's fill and drain; interleaving divides the fill and drain by vp.
      pipe = m * c_max + (fb_sum - c_max) / p_.vp + 2 * (pp - 1) * p2p_max;
      for (int s = 1; s < pp; ++s) drain[s] = drain[s - 1] + B[s - 1] / p_.vp + p2p[s - 1];
    }
    // The step's start: its fixed host work and first launch, a blocking batch copy.
    double start = p_.host_step_s + h;
    if (p_.batch_copy_blocking && p_.batch_copy_bytes > 0 && p_.batch_copy_Bps > 0)
      start += p_.batch_copy_bytes / p_.batch_copy_Bps;
    const ListTime opt = list(p_.optimizer);
    const double optimizer = std::max(opt.stream_s, opt.launches * h);
    FastEstimate out;
    double gather_delay = 0;
    for (int s = 0; s < pp; ++s) {
      double extra = 0;
      for (int c = 0; c < chunks && !walked; ++c) extra = std::max(extra, first_fwd_extra[s][c]);
      gather_delay = std::max(gather_delay, extra + zero12_gather_delay(s, fwd[s], F));
    }
    for (int s = 0; s < pp; ++s) {
      const double end_b = pipe - drain[s] + last_bwd_extra[s];
      double end = end_b + reduction_tail(s, bwd[s], keep_gathered) + optimizer + offload_s(s) +
                   zero12_gather_after_optimizer(s);
      if (end > out.step_time_s || s == 0) out.step_time_s = end, out.critical_stage = s;
    }
    out.step_time_s += start + gather_delay;
    if (p_.batch_copy_bytes > 0 && p_.batch_copy_Bps > 0 && !p_.batch_copy_blocking)
      out.step_time_s = std::max(out.step_time_s, p_.batch_copy_bytes / p_.batch_copy_Bps);
    return out;
  }

 private:
  bool dualpipe() const { return p_.schedule == ScheduleKind::DualPipe; }

  // Each rank's end of its DualPipe items: the pairs' times (in `dual`) with each chunk's
  // forward, backward and deferred weight gradients alone, no faster than their launches.
  std::vector<double> dualpipe_ends(const std::vector<std::vector<ListTime>>& fwd,
                                    const std::vector<std::vector<ListTime>>& bwd, std::vector<DualPipeRankTimes>& dual,
                                    const std::vector<double>& p2p) const {
    for (int s = 0; s < p_.pp; ++s)
      for (int c = 0; c < 2; ++c) {
        DualPipeRankTimes& d = dual[s];
        d.forward[c] = item_s(fwd[s][c]);
        d.backward[c] = item_s(bwd[s][c]);
        d.weight[c] = bwd[s][c].wgrad_s;
        d.backward_input[c] = std::max(0.0, d.backward[c] - d.weight[c]);
      }
    return dualpipe_rank_ends(p_.pp, p_.micro_batches, dual, p2p);
  }
  bool paired() const { return dualpipe() || p_.pair_forward_backward; }
  // A pipeline item alone: its stream time, no faster than its launches, plus its host syncs.
  double item_s(const ListTime& t) const {
    const double h = p_.host_launch_s;
    return std::max(t.stream_s, t.launches * h) + t.syncs * h;
  }

  // Each rank's end of its 1F1B or interleaved items (pipeline_walk.hpp): each chunk's forward
  // and backward alone, no faster than their launches.
  std::vector<double> pipeline_ends(const std::vector<std::vector<ListTime>>& fwd,
                                    const std::vector<std::vector<ListTime>>& bwd, const std::vector<double>& p2p,
                                    const std::vector<std::vector<double>>& first_fwd_extra) const {
    std::vector<PipelineRankTimes> times(p_.pp);
    for (int s = 0; s < p_.pp; ++s) {
      times[s].first_forward_extra = first_fwd_extra[s];
      for (int c = 0; c < p_.vp; ++c) {
        times[s].forward.push_back(item_s(fwd[s][c]));
        times[s].backward.push_back(item_s(bwd[s][c]));
      }
    }
    const ScheduleKind kind = p_.vp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
    return pipeline_rank_ends(kind, p_.pp, p_.vp, p_.micro_batches, times, p2p, p_.blocking_p2p);
  }

  int positions() const { return dualpipe() ? 2 * p_.pp : p_.pp * p_.vp; }
  int vstage(int chunk, int s) const { return dualpipe() ? (chunk == 0 ? s : 2 * p_.pp - 1 - s) : chunk * p_.pp + s; }
  int model_stage(int vs) const { return dualpipe() ? vs % p_.pp : vs; }
  bool first_position(int vs) const { return dualpipe() ? vs % p_.pp == 0 : vs == 0; }
  bool last_position(int vs) const { return dualpipe() ? vs % p_.pp == p_.pp - 1 : vs == positions() - 1; }
  std::pair<int, int> layer_range(int vs) const {
    if (!p_.vstage_begin.empty()) return {p_.vstage_begin[vs], p_.vstage_begin[vs + 1]};
    const int per = static_cast<int>(L_.size()) / (p_.pp * p_.vp);
    return {vs * per, (vs + 1) * per};
  }
  int shard_ranks() const { return p_.shard_size > 0 ? p_.shard_size : p_.dp * p_.cp; }
  bool reduces_gradients() const { return p_.dp * p_.cp > 1 || group_size(p_, Group::ExpertDp) > 1; }

  // Every stage's groups of a kind that have a rank on one of the first group's nodes, the first first.
  std::vector<std::vector<int>> node_sharing_groups(Group g) const {
    const topo::Cluster& c = ct_.cluster();
    std::vector<std::vector<int>> out;
    std::vector<char> first_nodes(c.num_nodes(), 0);
    for (int s = 0; s < p_.pp; ++s)
      for (std::vector<int>& r : communicator_groups(p_, g, s)) {
        if (out.empty()) {
          for (int rank : r) first_nodes[c.node_of_gpu(rank)] = 1;
        } else if (std::none_of(r.begin(), r.end(), [&](int rank) { return first_nodes[c.node_of_gpu(rank)]; })) {
          continue;
        }
        out.push_back(std::move(r));
      }
    return out;
  }

  double coll_s(Group g, coll::CollectiveOp op, double bytes, const coll::MoeDispatch& d = {}) {
    if (bytes <= 0 || group_size(p_, g) < 2) return 0.0;
    const int gi = static_cast<int>(g);
    // The groups of the kind that run at once with stage 0's first and share one of its nodes
    // (the tp copies of a data-parallel reduction, the stages of a pipeline inside one PCIe
    // server): where their routes share links they slow each other. Groups on other nodes meet
    // it only in the fabric, which rail-aligned layouts keep apart.
    if (groups_[gi].empty()) groups_[gi] = ct_.sharing_first(node_sharing_groups(g));
    if (groups_[gi].empty() || groups_[gi].front().size() < 2) return 0.0;
    // The plan's own collectives repeat every layer: look them up here before the shared cache.
    for (const Known& k : known_)
      if (k.group == gi && k.op == op && k.bytes == bytes && k.dispatch == d) return k.s;
    std::vector<coll::Collective> at_once(groups_[gi].size());
    for (size_t i = 0; i < at_once.size(); ++i) {
      at_once[i].op = op;
      at_once[i].ranks = groups_[gi][i];
      at_once[i].bytes = bytes;
      at_once[i].dispatch = d;
    }
    known_.push_back({gi, op, bytes, d, ct_.seconds(at_once)});
    return known_.back().s;
  }

  // Program order on one stream (replay.cpp's run_ops): compute runs back to back; a collective
  // the next op overlaps (overlaps_next) runs beside that op alone, with any others pending.
  ListTime list(const std::vector<CostedOp>& ops) {
    ListTime t;
    ConcurrentCollectives pending;
    double pending_sm_s = 0;
    bool any_pending = false;
    const double sm = ct_.tuning().sm_fraction;
    for (const CostedOp& op : ops) {
      if (op.kind == CostedOp::Kind::Collective) {
        const double s = coll_s(op.group, op.op, op.bytes, op.dispatch);
        if (op.bytes > 0 && group_size(p_, op.group) >= 2) t.launches += op.launches;
        if (op.host_sync) ++t.syncs;
        if (op.overlaps_next) {
          any_pending = true;
          pending.add(op.group, s);
          if (op.group != Group::TP && op.group != Group::EP) pending_sm_s += sm * s;
        } else {
          t.stream_s += s, t.comm_s += s;
        }
        continue;
      }
      t.launches += op.launches;
      if (op.host_sync) ++t.syncs;
      if (op.weight_grad) t.wgrad_s += op.seconds;
      if (any_pending) {
        const double with = std::max(op.seconds + pending_sm_s, pending.seconds());
        t.stream_s += with, t.comm_s += with - op.seconds;
        any_pending = false, pending = ConcurrentCollectives{}, pending_sm_s = 0;
      } else {
        t.stream_s += op.seconds;
      }
    }
    if (any_pending) t.stream_s += pending.seconds(), t.comm_s += pending.seconds();
    return t;
  }

  // A chunk's forward or backward of one micro-batch as a chain of stream segments: compute
  // (GPU seconds) and collective waits (wall seconds, with the group whose links they use); a
  // collective under the next op leaves only what outlasts that op (and the SMs it takes).
  void append_segments(const std::vector<CostedOp>& ops, std::vector<PairSegment>& out) {
    const auto add = [&](int group, double t) {
      if (t <= 0) return;
      if (!out.empty() && out.back().group == group)
        out.back().s += t;
      else
        out.push_back({group, t});
    };
    ConcurrentCollectives pending;
    double pending_sm_s = 0;  // the SMs an off-stream collective holds (list()'s share)
    const double sm = ct_.tuning().sm_fraction;
    for (const CostedOp& op : ops) {
      if (op.kind == CostedOp::Kind::Collective) {
        const double t = coll_s(op.group, op.op, op.bytes, op.dispatch);
        if (op.overlaps_next) {
          pending.add(op.group, t);
          if (op.group != Group::TP && op.group != Group::EP) pending_sm_s += sm * t;
        } else {
          add(static_cast<int>(op.group), t);
        }
        continue;
      }
      add(-1, op.seconds + pending_sm_s);
      if (pending.seconds() > 0) add(pending.group(), pending.seconds() - op.seconds - pending_sm_s);
      pending = ConcurrentCollectives{}, pending_sm_s = 0;
    }
    add(pending.group(), pending.seconds());
  }
  std::vector<PairSegment> chain(int s, int c, bool backward) {
    std::vector<PairSegment> out;
    const int vs = vstage(c, s);
    const auto [l0, l1] = layer_range(model_stage(vs));
    if (!backward) {
      if (first_position(vs)) append_segments(p_.pre_forward, out);
      for (int l = l0; l < l1; ++l) append_segments(L_[l].forward, out);
      if (last_position(vs)) append_segments(p_.post_forward, out);
    } else {
      if (last_position(vs)) append_segments(p_.pre_backward, out);
      for (int l = l1 - 1; l >= l0; --l) append_segments(L_[l].backward, out);
      if (first_position(vs)) append_segments(p_.post_backward, out);
    }
    return out;
  }
  // Layers share costed programs by kind (kinds_): time each distinct list once.
  ListTime layer_list(int l, bool backward) {
    const int first = (backward ? kinds_.backward : kinds_.forward)[l];
    std::vector<int>& of_layer = backward ? backward_memo_ : forward_memo_;
    if (of_layer.empty()) of_layer.assign(L_.size(), -1);
    if (of_layer[first] < 0) {
      memo_.push_back(list(backward ? L_[first].backward : L_[first].forward));
      of_layer[first] = static_cast<int>(memo_.size() - 1);
    }
    return memo_[of_layer[first]];
  }

  double reduce_scatter_over_shards_s(double bytes) {
    double t = coll_s(Group::DpShard, coll::CollectiveOp::ReduceScatter, bytes);
    if (shard_ranks() < p_.dp * p_.cp)
      t += coll_s(Group::DpReplicate, coll::CollectiveOp::AllReduce, bytes / shard_ranks());
    return t;
  }
  double gather_s(const LayerProgram& L) {
    const int pieces = std::max(1, p_.fsdp_gathers_per_layer);  // one after another (replay_comm.cpp)
    // Offloaded parameters: the shard crosses from host memory before its gather (stage 0's
    // rate: the stages' nodes are alike).
    const double fetch = p_.offload_params ? (L.param_bytes / std::max(1, group_size(p_, Group::DpShard)) +
                                              L.expert_param_bytes / std::max(1, group_size(p_, Group::ExpertDp))) *
                                                 host_copy_s(0, false)
                                           : 0.0;
    return fetch + pieces * coll_s(Group::DpShard, coll::CollectiveOp::AllGather, L.param_bytes / pieces) +
           coll_s(Group::ExpertDp, coll::CollectiveOp::AllGather, L.expert_param_bytes);
  }
  double reduce_scatter_s(const LayerProgram& L) {
    return reduce_scatter_over_shards_s(L.grad_bytes) +
           coll_s(Group::ExpertDp, coll::CollectiveOp::ReduceScatter, L.expert_grad_bytes);
  }

  // What the stage's data-parallel reduction runs past its last backward: buckets (or FSDP's
  // per-layer reduce-scatters under a pipeline) start as their last gradient of the last
  // micro-batch is ready, one after another on their stream (the routed experts' on their own).
  double reduction_tail(int s, const std::vector<ListTime>& bwd, bool fsdp_kept) {
    if (!reduces_gradients()) {
      // Nothing reduced: ZeRO-Offload copies the whole gradient to the host, in fp32.
      return p_.offload_optimizer ? 2.0 * shard16(s) * host_copy_s(s, true) : 0.0;
    }
    if (p_.zero >= 3 && !fsdp_kept) {
      // FSDP per micro-batch: the last reduce-scatter; ZeRO-Offload's copies of each reduced
      // layer to the host run under the last backward as far as it lasts.
      const int vs = vstage(0, s);
      const auto [l0, l1] = layer_range(model_stage(vs));
      double tail = l1 > l0 ? reduce_scatter_s(L_[l0]) : 0.0;
      if (p_.offload_optimizer) {
        double under = 0;
        for (const ListTime& b : bwd) under += b.stream_s;
        double bytes = 0, expert_bytes = 0;
        for (int c = 0; c < (dualpipe() ? 2 : p_.vp); ++c) {
          const int v = vstage(c, s);
          const auto [first, end] = layer_range(model_stage(v));
          for (int l = first; l < end; ++l) bytes += L_[l].grad_bytes, expert_bytes += L_[l].expert_grad_bytes;
          if (first_position(v)) bytes += p_.embedding_grad_bytes;
          if (last_position(v)) bytes += p_.head_grad_bytes;
        }
        const double copies = grads_to_host_s(s, bytes, expert_bytes);
        const double last = l1 > l0 ? grads_to_host_s(s, L_[l0].grad_bytes, L_[l0].expert_grad_bytes) : 0.0;
        tail += std::max(last, copies - under);
      }
      return tail;
    }
    const int chunks = dualpipe() ? 2 : p_.vp;
    struct Ready {
      double t, bytes, expert_bytes;  // t: seconds before the stage's last backward ends
    };
    std::vector<Ready> ready;
    // The last micro-batch's backward of each chunk: chunk 0's last (interleaved: vp-1 first),
    // a round of pp chunk backwards apart.
    for (int k = 0; k < chunks; ++k) {
      const int c = dualpipe() ? k : chunks - 1 - k;
      const double chunk_end = dualpipe() ? 0.0 : c * std::min(p_.pp, p_.micro_batches) * bwd[c].stream_s;
      const int vs = vstage(c, s);
      const auto [l0, l1] = layer_range(model_stage(vs));
      // Backward order: the head's gradients, the layers last to first, the embedding's.
      double left = bwd[c].stream_s;  // backward still to run in this chunk at each point
      if (last_position(vs)) {
        left -= list(p_.pre_backward).stream_s;
        ready.push_back({chunk_end + left, p_.head_grad_bytes, 0.0});
      }
      for (int l = l1 - 1; l >= l0; --l) {
        left -= layer_list(l, true).stream_s;
        ready.push_back({chunk_end + std::max(0.0, left), L_[l].grad_bytes, L_[l].expert_grad_bytes});
      }
      if (first_position(vs)) ready.push_back({chunk_end, p_.embedding_grad_bytes, 0.0});
    }
    std::stable_sort(ready.begin(), ready.end(), [](const Ready& a, const Ready& b) { return a.t > b.t; });
    double free_at = -1e30, expert_free_at = -1e30;
    BucketFill dense(p_.dp_bucket_bytes), experts(p_.dp_bucket_bytes);
    double copied_at = -1e30;  // ZeRO-Offload: each reduced shard to the host once it is reduced
    const auto to_host = [&](double reduced_at, double bytes, double expert_bytes) {
      if (p_.offload_optimizer) copied_at = std::max(copied_at, reduced_at) + grads_to_host_s(s, bytes, expert_bytes);
    };
    const bool rs = p_.zero >= 1;
    for (size_t i = 0; i < ready.size(); ++i) {
      const double at = p_.overlap_grad_reduce ? -ready[i].t : 0.0;
      const bool last = i + 1 == ready.size();
      if (fsdp_kept) {
        LayerProgram L;
        L.grad_bytes = ready[i].bytes;
        L.expert_grad_bytes = ready[i].expert_bytes;
        free_at = std::max(free_at, at) + reduce_scatter_s(L);
        to_host(free_at, L.grad_bytes, L.expert_grad_bytes);
        continue;
      }
      if (dense.add(ready[i].bytes, last)) {
        const double bucket = dense.take();
        const double d =
            rs ? reduce_scatter_over_shards_s(bucket) : coll_s(Group::DP, coll::CollectiveOp::AllReduce, bucket);
        free_at = std::max(free_at, at) + d;
        to_host(free_at, bucket, 0.0);
      }
      if (double bucket = 0; experts.add(ready[i].expert_bytes, last) && (bucket = experts.take()) > 0) {
        const double d =
            coll_s(Group::ExpertDp, rs ? coll::CollectiveOp::ReduceScatter : coll::CollectiveOp::AllReduce, bucket);
        expert_free_at = std::max(expert_free_at, at) + d;
        to_host(expert_free_at, 0.0, bucket);
      }
    }
    return std::max({0.0, free_at, expert_free_at, copied_at});
  }

  double stage_param_bytes(int s, bool experts) const {
    const int chunks = dualpipe() ? 2 : p_.vp;
    double b = 0;
    for (int c = 0; c < chunks; ++c) {
      const int vs = vstage(c, s);
      const auto [l0, l1] = layer_range(model_stage(vs));
      for (int l = l0; l < l1; ++l) b += experts ? L_[l].expert_param_bytes : L_[l].param_bytes;
      if (!experts && (first_position(vs) || last_position(vs))) b += p_.embedding_param_bytes;
    }
    return b;
  }

  bool zero12_gathers() const { return p_.zero >= 1 && p_.zero <= 2 && reduces_gradients(); }

  double zero12_gather_after_optimizer(int s) {
    if (!zero12_gathers() || p_.overlap_param_gather) return 0.0;
    return std::max(coll_s(Group::DpShard, coll::CollectiveOp::AllGather, stage_param_bytes(s, false)),
                    coll_s(Group::ExpertDp, coll::CollectiveOp::AllGather, stage_param_bytes(s, true)));
  }

  // ZeRO-1/2 with overlap_param_gather: each buffer's bucket gathers (dense, and the routed
  // experts' own) run one after another from the step's start in forward order, chunk after
  // chunk; each layer's first forward of the step waits for its bucket. The gathers do not wait
  // for compute, so the delay is the latest bucket against the undelayed compute. Interleaved
  // 1F1B runs a round of pp forwards of a chunk before the next chunk's first one, so later
  // chunks' gathers must keep up with a round each; DualPipe's rank runs (pp/2 - h - 1) * 2 + 1
  // forwards of its first direction before the second's first (h: the rank's distance from the
  // nearer end; dualpipe.py's steps 1-2), one forward on the middle ranks.
  double zero12_gather_delay(int s, const std::vector<ListTime>& fwd, const std::vector<double>& F) {
    if (!zero12_gathers() || !p_.overlap_param_gather) return 0.0;
    double before = 0;  // compute before the chunk's first forward: the fill, then earlier rounds
    for (int k = 0; k < s; ++k) before += F[k] / (dualpipe() ? 2 : p_.vp);
    const int chunks = dualpipe() ? 2 : p_.vp;
    const int round =
        dualpipe() ? (p_.pp / 2 - std::min(s, p_.pp - 1 - s) - 1) * 2 + 1 : std::min(p_.pp, p_.micro_batches);
    struct Buffer {
      Group group;
      double LayerProgram::*bytes;
      double gathered = 0;  // when its latest gather ends
    };
    Buffer buffers[2] = {{Group::DpShard, &LayerProgram::param_bytes},
                         {Group::ExpertDp, &LayerProgram::expert_param_bytes}};
    double delay = 0;
    for (int c = 0; c < chunks; ++c) {
      const int vs = vstage(c, s);
      const auto [l0, l1] = layer_range(model_stage(vs));
      const double start = before + (first_position(vs) ? list(p_.pre_forward).stream_s : 0.0);
      for (Buffer& b : buffers) {
        double compute = start;
        const double head =
            b.group == Group::DpShard && (first_position(vs) || last_position(vs)) ? p_.embedding_param_bytes : 0.0;
        if (l1 == l0 && head > 0) {  // a chunk of the embedding or output layer alone
          b.gathered += coll_s(b.group, coll::CollectiveOp::AllGather, head);
          delay = std::max(delay, b.gathered - compute);
        }
        BucketFill bucket(p_.dp_bucket_bytes, head);
        for (int l = l0, first = l0; l < l1; ++l) {
          if (!bucket.add(L_[l].*b.bytes, l + 1 == l1)) continue;
          if (const double bytes = bucket.take(); bytes > 0) {
            b.gathered += coll_s(b.group, coll::CollectiveOp::AllGather, bytes);
            delay = std::max(delay, b.gathered - compute);
          }
          for (int k = first; k <= l; ++k) compute += layer_list(k, false).stream_s;
          first = l + 1;
        }
      }
      before += round * fwd[c].stream_s;
    }
    return std::max(0.0, delay);
  }

  // ZeRO-Offload: the host's Adam over the node's shards, after the last gradients, then the
  // updated 16-bit shard back to the GPU (offloaded parameters stay on the host).
  double offload_s(int s) {
    if (!p_.offload_optimizer || p_.host_memory_Bps <= 0) return 0.0;
    const int node_gpus = ct_.cluster().gpus_per_node();
    const double adam = node_gpus * shard16(s) / 2.0 * p_.offload_host_bytes_per_param / p_.host_memory_Bps;
    return adam + (p_.offload_params ? 0.0 : shard16(s) * host_copy_s(s, false));
  }
  // This rank's 16-bit parameter shard on stage s, dense and expert.
  double shard16(int s) const {
    return stage_param_bytes(s, false) / std::max(1, group_size(p_, Group::DpShard)) +
           stage_param_bytes(s, true) / std::max(1, group_size(p_, Group::ExpertDp));
  }
  // Reduced gradients of `bytes` (dense) and `expert_bytes` to the host: this rank's shards.
  double grads_to_host_s(int s, double bytes, double expert_bytes) {
    return (bytes / std::max(1, group_size(p_, Group::DpShard)) +
            expert_bytes / std::max(1, group_size(p_, Group::ExpertDp))) *
           p_.offload_d2h_per_grad_byte * host_copy_s(s, true);
  }
  // Seconds per byte of a host copy of each GPU of stage s on its node, all at once
  // (host_copies.hpp, as the replay's add_host_copies).
  double host_copy_s(int s, bool to_host) {
    std::vector<double>& memo = to_host ? d2h_s_ : h2d_s_;
    if (memo.empty()) memo.assign(p_.pp, -1.0);
    if (memo[s] < 0) {
      const topo::Cluster& c = ct_.cluster();
      const int node = c.node_of_gpu(global_rank(p_, 0, 0, 0, s));
      memo[s] = host_copy_seconds_per_byte(c, stage_ranks_on_node(p_, c, s, node), to_host);
    }
    return memo[s];
  }

  const StepProgram& p_;
  const std::vector<LayerProgram>& L_;
  CollectiveTimes& ct_;
  std::vector<std::vector<int>> groups_[7];  // per Group: the first group and those sharing its links
  std::vector<double> d2h_s_, h2d_s_;        // per stage: host_copy_s
  const LayerKinds& kinds_;
  std::vector<ListTime> memo_;
  std::vector<int> forward_memo_, backward_memo_;  // per kind's first layer: its entry in memo_ (-1: not yet)
  struct Known {
    int group;
    coll::CollectiveOp op;
    double bytes;
    coll::MoeDispatch dispatch;
    double s;
  };
  std::vector<Known> known_;
};

}  // namespace

LayerKinds layer_kinds(const std::vector<LayerProgram>& layers) {
  LayerKinds k;
  for (size_t l = 0; l < layers.size(); ++l)
    for (bool backward : {false, true}) {
      std::vector<int>& of = backward ? k.backward : k.forward;
      const auto ops = [&](size_t i) -> const std::vector<CostedOp>& {
        return backward ? layers[i].backward : layers[i].forward;
      };
      size_t first = 0;
      while (first < l && !(of[first] == static_cast<int>(first) && same_ops(ops(first), ops(l)))) ++first;
      of.push_back(static_cast<int>(first));
    }
  return k;
}

FastEstimate fast_estimate_step(const StepProgram& program, CollectiveTimes& collectives) {
  const LayerKinds kinds = layer_kinds(program.layers);
  return Estimator(program, program.layers, kinds, collectives).run();
}

FastEstimate fast_estimate_step(const StepProgram& program, const std::vector<LayerProgram>& layers,
                                CollectiveTimes& collectives) {
  const LayerKinds kinds = layer_kinds(layers);
  return Estimator(program, layers, kinds, collectives).run();
}

FastEstimate fast_estimate_step(const StepProgram& program, const std::vector<LayerProgram>& layers,
                                const LayerKinds& kinds, CollectiveTimes& collectives) {
  return Estimator(program, layers, kinds, collectives).run();
}

}  // namespace stacksim::workload
