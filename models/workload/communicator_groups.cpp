// The communicator groups of one pipeline stage (replay.hpp), shared by the replay and the fast tier.
#include "models/workload/replay.hpp"

namespace stacksim::workload {

std::vector<std::vector<int>> communicator_groups(const StepProgram& p, Group g, int s) {
  std::vector<std::vector<int>> out;
  switch (g) {
    case Group::TP:
      for (int c = 0; c < p.cp; ++c) {
        std::vector<int> r;
        for (int t = 0; t < p.tp; ++t) r.push_back(global_rank(p, t, c, 0, s));
        out.push_back(r);
      }
      break;
    case Group::CP:
      for (int t = 0; t < p.tp; ++t) {
        std::vector<int> r;
        for (int c = 0; c < p.cp; ++c) r.push_back(global_rank(p, t, c, 0, s));
        out.push_back(r);
      }
      break;
    case Group::EP:
      // Expert parallelism is carved out of context x data parallelism (expert_span), or of
      // tensor x context x data parallelism with whole experts.
      if (p.experts_folded) {
        for (int first = 0; first < expert_span(p); first += p.ep) {
          std::vector<int> r;
          for (int e = first; e < first + p.ep; ++e)
            r.push_back(global_rank(p, e % p.tp, (e / p.tp) % p.cp, e / (p.tp * p.cp), s));
          out.push_back(r);
        }
        break;
      }
      for (int t = 0; t < p.tp; ++t)
        for (int first = 0; first < expert_span(p); first += p.ep) {
          std::vector<int> r;
          for (int e = first; e < first + p.ep; ++e) r.push_back(global_rank(p, t, e % p.cp, e / p.cp, s));
          out.push_back(r);
        }
      break;
    case Group::ExpertDp: {
      // The ranks at the same place in their expert-parallel groups (blocks of ep consecutive
      // expert indices, as Group::EP): expert indices equal modulo ep.
      const int width = p.experts_folded ? p.tp * p.cp * p.dp : p.cp * p.dp;
      for (int t = 0; t < (p.experts_folded ? 1 : p.tp); ++t)
        for (int j = 0; j < p.ep; ++j) {
          std::vector<int> r;
          for (int e = j; e < width; e += p.ep)
            r.push_back(p.experts_folded ? global_rank(p, e % p.tp, (e / p.tp) % p.cp, e / (p.tp * p.cp), s)
                                         : global_rank(p, t, e % p.cp, e / p.cp, s));
          out.push_back(r);
        }
      break;
    }
    case Group::DP:
    case Group::DpShard:
    case Group::DpReplicate: {
      // Gradients (and ZeRO/FSDP shards) are reduced over data AND context parallelism
      // (Megatron's data-parallel-with-context-parallel group): cp ranks hold the same weights.
      // Index e = c + cp * d; shard groups are blocks of shard_size consecutive e, replicate
      // groups the e that are equal modulo shard_size.
      const int n = p.dp * p.cp, shard = p.shard_size > 0 ? p.shard_size : n;
      const auto rank_of = [&](int t, int e) { return global_rank(p, t, e % p.cp, e / p.cp, s); };
      for (int t = 0; t < p.tp; ++t) {
        if (g == Group::DP || (g == Group::DpShard && shard == n)) {
          std::vector<int> r;
          for (int e = 0; e < n; ++e) r.push_back(rank_of(t, e));
          out.push_back(r);
        } else if (g == Group::DpShard) {
          for (int first = 0; first < n; first += shard) {
            std::vector<int> r;
            for (int e = first; e < first + shard; ++e) r.push_back(rank_of(t, e));
            out.push_back(r);
          }
        } else {
          for (int j = 0; j < shard; ++j) {
            std::vector<int> r;
            for (int e = j; e < n; e += shard) r.push_back(rank_of(t, e));
            out.push_back(r);
          }
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace stacksim::workload
